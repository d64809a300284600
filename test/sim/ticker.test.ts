import { test } from 'node:test';
import assert from 'node:assert/strict';

import { VirtualClock } from '../../src/sim/clock.js';
import { Ticker } from '../../src/sim/ticker.js';

function etcdTicker(clock: VirtualClock, log: string[]): Ticker {
  const ticker = new Ticker(clock);
  ticker.add('watch.victims', 10, () => log.push(`watch.victims@${clock.now()}`));
  ticker.add('watch.sync', 100, () => log.push(`watch.sync@${clock.now()}`));
  ticker.add('lease.expiry', 500, () => log.push(`lease.expiry@${clock.now()}`));
  return ticker;
}

test('steps fire once per period over advance(1000) and in registration order when coinciding', () => {
  const clock = new VirtualClock();
  const log: string[] = [];
  etcdTicker(clock, log);
  clock.advance(1000);
  const count = (name: string): number => log.filter((e) => e.startsWith(`${name}@`)).length;
  assert.equal(count('watch.victims'), 100);
  assert.equal(count('watch.sync'), 10);
  assert.equal(count('lease.expiry'), 2);
  const at = (t: number): string[] => log.filter((e) => e.endsWith(`@${t}`));
  assert.deepEqual(at(100), ['watch.victims@100', 'watch.sync@100']);
  assert.deepEqual(at(500), ['watch.victims@500', 'watch.sync@500', 'lease.expiry@500']);
  assert.deepEqual(log.slice(-3), ['watch.victims@1000', 'watch.sync@1000', 'lease.expiry@1000']);
  assert.equal(log[0], 'watch.victims@10');
});

test('rank overrides registration order; steps() lists the run order', () => {
  const clock = new VirtualClock();
  const log: string[] = [];
  const ticker = new Ticker(clock);
  ticker.add('watch.sync', 100, () => log.push('watch.sync'));
  ticker.add('lease.expiry', 500, () => log.push('lease.expiry'), { rank: -1 });
  ticker.add('watch.victims', 10, () => log.push('watch.victims'));
  assert.deepEqual(
    ticker.steps().map((s) => [s.name, s.rank, s.nextDueMs]),
    [
      ['lease.expiry', -1, 500],
      ['watch.sync', 0, 100],
      ['watch.victims', 0, 10],
    ],
  );
  clock.advanceTo(500);
  assert.deepEqual(log.slice(-3), ['lease.expiry', 'watch.sync', 'watch.victims']);
});

test('steps due together run back to back; other timers keep their own place', () => {
  const clock = new VirtualClock();
  const log: string[] = [];
  clock.setTimer(100, () => log.push('early-timer'));
  const ticker = new Ticker(clock);
  ticker.add('a', 50, () => {
    log.push(`a@${clock.now()}`);
    if (clock.now() === 100) clock.setTimer(100, () => log.push('timer-from-a'));
  });
  ticker.add('b', 100, () => log.push(`b@${clock.now()}`));
  clock.advance(100);
  assert.deepEqual(log, ['a@50', 'early-timer', 'a@100', 'b@100', 'timer-from-a']);
  assert.equal(clock.pending(), 1, 'a ticker holds a single clock timer');
});

test('phase staggers a step off the shared grid', () => {
  const clock = new VirtualClock();
  const log: string[] = [];
  const ticker = new Ticker(clock);
  ticker.add('x', 100, () => log.push(`x@${clock.now()}`));
  ticker.add('y', 100, () => log.push(`y@${clock.now()}`), { phase: 50 });
  clock.advance(200);
  assert.deepEqual(log, ['y@50', 'x@100', 'y@150', 'x@200']);
});

test('removing a step inside a run stops it at once; a step added inside a run waits for its next instant', () => {
  const clock = new VirtualClock();
  const log: string[] = [];
  const ticker = new Ticker(clock);
  ticker.add('first', 10, () => {
    log.push(`first@${clock.now()}`);
    if (clock.now() === 20) {
      assert.equal(ticker.remove('second'), true);
      ticker.add('late', 10, () => log.push(`late@${clock.now()}`));
    }
  });
  ticker.add('second', 10, () => log.push(`second@${clock.now()}`));
  clock.advance(30);
  assert.deepEqual(log, ['first@10', 'second@10', 'first@20', 'first@30', 'late@30']);
  assert.equal(ticker.has('second'), false);
  assert.equal(ticker.remove('second'), false);
});

test('a throwing step propagates; it and the remaining due steps keep running afterwards', () => {
  const clock = new VirtualClock();
  const log: string[] = [];
  const ticker = new Ticker(clock);
  ticker.add('bad', 10, () => {
    log.push(`bad@${clock.now()}`);
    if (clock.now() === 10) throw new Error('step failed');
  });
  ticker.add('good', 10, () => log.push(`good@${clock.now()}`));
  assert.throws(() => clock.advance(30), /step failed/);
  assert.deepEqual(log, ['bad@10']);
  clock.runDue();
  assert.deepEqual(log, ['bad@10', 'good@10']);
  clock.advanceTo(30);
  assert.deepEqual(log, ['bad@10', 'good@10', 'bad@20', 'good@20', 'bad@30', 'good@30']);
});

test('duplicate names and bad periods are rejected; close() cancels the clock timer', () => {
  const clock = new VirtualClock();
  const ticker = new Ticker(clock);
  let runs = 0;
  ticker.add('s', 10, () => runs++);
  assert.throws(() => ticker.add('s', 20, () => {}), /already registered/);
  assert.throws(() => ticker.add('t', -5, () => {}), RangeError);
  assert.equal(clock.pending(), 1);
  ticker.close();
  assert.equal(clock.pending(), 0);
  clock.advance(100);
  assert.equal(runs, 0);
  assert.throws(() => ticker.add('u', 10, () => {}), /closed/);
});

test('a whole ticker-driven run is reproducible', () => {
  const run = (): string[] => {
    const clock = new VirtualClock();
    const log: string[] = [];
    etcdTicker(clock, log);
    for (let t = 0; t < 20; t++) clock.setTimer(t * 37, () => log.push(`t${t}@${clock.now()}`));
    clock.advance(777);
    return log;
  };
  const a = run();
  assert.ok(a.length > 80);
  assert.deepEqual(run(), a);
});
