import { test } from 'node:test';
import assert from 'node:assert/strict';

import { RealClock, VirtualClock, nextPeriodicDue, type TimerHandle } from '../../src/sim/clock.js';
import { SimRandom } from '../../src/sim/random.js';

test('advance runs due timers in time order, ties in scheduling order, and leaves later ones pending', () => {
  const clock = new VirtualClock();
  const log: string[] = [];
  clock.setTimer(30, () => log.push('a@30'));
  clock.setTimer(10, () => log.push('b@10'));
  clock.setTimer(30, () => log.push('c@30'));
  clock.setTimer(20, () => log.push('d@20'));
  clock.setTimer(10, () => log.push('e@10'));
  clock.setTimer(101, () => log.push('late@101'));
  assert.equal(clock.advance(100), 5);
  assert.deepEqual(log, ['b@10', 'e@10', 'd@20', 'a@30', 'c@30']);
  assert.equal(clock.now(), 100);
  assert.equal(clock.pending(), 1);
  assert.equal(clock.nextDue(), 101);
  clock.advance(1);
  assert.deepEqual(log.at(-1), 'late@101');
});

test('a timer due exactly at the end of the window runs; one just after does not', () => {
  const clock = new VirtualClock(1000);
  const log: number[] = [];
  clock.setTimer(1500, () => log.push(1500));
  clock.setTimer(1500.5, () => log.push(1500.5));
  clock.advanceTo(1500);
  assert.deepEqual(log, [1500]);
});

test('now() inside a callback equals the timer due time', () => {
  const clock = new VirtualClock(5);
  const seen: Array<[number, number]> = [];
  for (const at of [7, 50, 12, 50, 99]) clock.setTimer(at, () => seen.push([at, clock.now()]));
  clock.advance(200);
  assert.deepEqual(seen, [
    [7, 7],
    [12, 12],
    [50, 50],
    [50, 50],
    [99, 99],
  ]);
  assert.equal(clock.now(), 205);
});

test('timers scheduled from a callback run in the same advance when due inside the window', () => {
  const clock = new VirtualClock();
  const log: string[] = [];
  clock.setTimer(10, () => {
    log.push(`outer@${clock.now()}`);
    clock.setTimer(clock.now(), () => log.push(`same-instant@${clock.now()}`));
    clock.setTimer(40, () => {
      log.push(`inner@${clock.now()}`);
      clock.setTimer(90, () => log.push(`nested@${clock.now()}`));
    });
    clock.setTimer(150, () => log.push(`outside@${clock.now()}`));
  });
  clock.setTimer(10, () => log.push(`sibling@${clock.now()}`));
  clock.advance(100);
  assert.deepEqual(log, ['outer@10', 'sibling@10', 'same-instant@10', 'inner@40', 'nested@90']);
  assert.equal(clock.pending(), 1);
  clock.advance(50);
  assert.deepEqual(log.at(-1), 'outside@150');
});

test('a timer set in the past runs at the current instant and time never goes backwards', () => {
  const clock = new VirtualClock(100);
  const seen: number[] = [];
  clock.setTimer(3, () => seen.push(clock.now()));
  assert.equal(clock.nextDue(), 100);
  assert.equal(clock.runDue(), 1);
  assert.deepEqual(seen, [100]);
  assert.equal(clock.now(), 100);
});

test('cancel removes a pending timer and reports whether it was pending', () => {
  const clock = new VirtualClock();
  const log: string[] = [];
  const a = clock.setTimer(10, () => log.push('a'));
  const b = clock.setTimer(20, () => log.push('b'));
  let c: TimerHandle | undefined;
  clock.setTimer(15, () => {
    log.push('canceller');
    assert.equal(clock.cancel(c!), true);
  });
  c = clock.setTimer(30, () => log.push('c'));
  assert.equal(clock.cancel(b), true);
  assert.equal(clock.cancel(b), false, 'second cancel is a no-op');
  assert.equal(clock.pending(), 3);
  clock.advance(100);
  assert.deepEqual(log, ['a', 'canceller']);
  assert.equal(clock.cancel(a), false, 'cancel after firing is a no-op');
  assert.equal(clock.pending(), 0);
});

test('a handle from another clock is not accepted', () => {
  const one = new VirtualClock();
  const two = new VirtualClock();
  const h = one.setTimer(10, () => {});
  two.setTimer(10, () => {});
  assert.equal(two.cancel(h), false);
  assert.equal(two.pending(), 1);
  assert.equal(new RealClock().cancel(h), false);
  assert.equal(one.cancel(h), true);
});

test('every() fires once per period over advance(1000), on the phase grid, until cancelled', () => {
  const clock = new VirtualClock();
  const at100: number[] = [];
  const at100p30: number[] = [];
  const h = clock.every(100, () => at100.push(clock.now()));
  clock.every(100, () => at100p30.push(clock.now()), { phase: 30 });
  clock.advance(1000);
  assert.deepEqual(at100, [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]);
  assert.deepEqual(at100p30, [30, 130, 230, 330, 430, 530, 630, 730, 830, 930]);
  assert.equal(clock.cancel(h), true);
  clock.advance(1000);
  assert.equal(at100.length, 10);
  assert.equal(at100p30.length, 20);
});

test('every() registered off-grid still ticks on the grid (strictly after now)', () => {
  const clock = new VirtualClock(37);
  const ticks: number[] = [];
  clock.every(100, () => ticks.push(clock.now()));
  clock.advanceTo(400);
  assert.deepEqual(ticks, [100, 200, 300, 400]);
  assert.equal(nextPeriodicDue(100, 100), 200);
  assert.equal(nextPeriodicDue(99, 100, -1), 199);
  assert.equal(nextPeriodicDue(0, 500, 1250), 250);
});

test('periodic timers due at the same instant run in creation order, at every coincidence', () => {
  const run = (order: 'fast-first' | 'slow-first'): string[] => {
    const clock = new VirtualClock();
    const log: string[] = [];
    const fast = (): unknown => clock.every(10, () => log.push(`fast@${clock.now()}`));
    const slow = (): unknown => clock.every(100, () => log.push(`slow@${clock.now()}`));
    if (order === 'fast-first') {
      fast();
      slow();
    } else {
      slow();
      fast();
    }
    clock.setTimer(200, () => log.push(`oneshot@${clock.now()}`)); // created last: runs after both
    clock.advance(1000);
    return log.filter((e) => e.endsWith('00') && !e.endsWith('@0'));
  };
  const fastFirst = run('fast-first');
  const slowFirst = run('slow-first');
  assert.equal(fastFirst.filter((e) => e.startsWith('fast')).length, 10);
  assert.deepEqual(fastFirst.slice(0, 5), ['fast@100', 'slow@100', 'fast@200', 'slow@200', 'oneshot@200']);
  assert.deepEqual(fastFirst.slice(-2), ['fast@1000', 'slow@1000']);
  assert.deepEqual(slowFirst.slice(0, 5), ['slow@100', 'fast@100', 'slow@200', 'fast@200', 'oneshot@200']);
  assert.deepEqual(slowFirst.slice(-2), ['slow@1000', 'fast@1000']);
});

test('a throwing callback propagates, stops the window at its due time, and the rest runs later', () => {
  const clock = new VirtualClock();
  const log: string[] = [];
  clock.setTimer(10, () => log.push('a'));
  clock.setTimer(20, () => {
    throw new Error('boom');
  });
  clock.setTimer(20, () => log.push('b'));
  const periodic = clock.every(50, () => {
    log.push(`p@${clock.now()}`);
    if (clock.now() === 50) throw new Error('periodic boom');
  });
  assert.throws(() => clock.advance(100), /boom/);
  assert.equal(clock.now(), 20);
  assert.deepEqual(log, ['a']);
  assert.throws(() => clock.advanceTo(100), /periodic boom/);
  assert.equal(clock.now(), 50);
  assert.deepEqual(log, ['a', 'b', 'p@50']);
  clock.advanceTo(100);
  assert.deepEqual(log, ['a', 'b', 'p@50', 'p@100'], 'a periodic timer survives its own exception');
  assert.equal(clock.cancel(periodic), true);
});

test('advance rejects negative, backwards, non-finite and re-entrant moves', () => {
  const clock = new VirtualClock(10);
  assert.throws(() => clock.advance(-1), RangeError);
  assert.throws(() => clock.advanceTo(9), RangeError);
  assert.throws(() => clock.advance(Number.NaN), RangeError);
  assert.throws(() => clock.setTimer(Number.POSITIVE_INFINITY, () => {}), RangeError);
  assert.throws(() => clock.every(0, () => {}), RangeError);
  assert.throws(() => clock.every(10.5, () => {}), RangeError);
  let inner: unknown;
  clock.setTimer(20, () => {
    try {
      clock.advance(5);
    } catch (e) {
      inner = e;
    }
  });
  clock.advance(20);
  assert.match(String(inner), /inside a timer callback/);
  assert.equal(clock.now(), 30);
});

test('pendingTimers lists timers in run order with their names', () => {
  const clock = new VirtualClock();
  clock.setTimer(50, () => {}, 'lease 7 expiry');
  clock.every(10, () => {}, { name: 'victims' });
  clock.setTimer(10, () => {});
  assert.deepEqual(clock.pendingTimers(), [
    { dueMs: 10, periodMs: 10, name: 'victims' },
    { dueMs: 10, periodMs: undefined, name: undefined },
    { dueMs: 50, periodMs: undefined, name: 'lease 7 expiry' },
  ]);
});

test('many random timers with random cancels fire exactly as a sorted reference predicts', () => {
  const rnd = new SimRandom(2024);
  const clock = new VirtualClock();
  const fired: Array<[number, number]> = [];
  const expected: Array<{ due: number; id: number; cancelled: boolean }> = [];
  const handles: TimerHandle[] = [];
  for (let id = 0; id < 20000; id++) {
    const due = rnd.nextInt(0, 5000);
    expected.push({ due, id, cancelled: false });
    handles.push(clock.setTimer(due, () => fired.push([clock.now(), id])));
  }
  for (let i = 0; i < 5000; i++) {
    const id = rnd.nextInt(0, handles.length - 1);
    const e = expected[id]!;
    assert.equal(clock.cancel(handles[id]!), !e.cancelled);
    e.cancelled = true;
  }
  let t = 0;
  while (t < 5000) clock.advanceTo((t = Math.min(5000, t + rnd.nextInt(1, 300))));
  const want = expected
    .filter((e) => !e.cancelled)
    .sort((a, b) => a.due - b.due || a.id - b.id)
    .map((e): [number, number] => [e.due, e.id]);
  assert.deepEqual(fired, want);
  assert.equal(clock.pending(), 0);
});

test('RealClock: now() is monotonic and near Date.now(); handles cancel without waiting', () => {
  const clock = new RealClock({ unref: true });
  let prev = clock.now();
  assert.ok(Math.abs(prev - Date.now()) < 1000);
  for (let i = 0; i < 1000; i++) {
    const t = clock.now();
    assert.ok(t >= prev, `now() went backwards: ${t} < ${prev}`);
    prev = t;
  }
  const fail = (): never => assert.fail('must never run');
  const h = clock.setTimer(clock.now() + 60_000, fail);
  assert.equal(clock.cancel(h), true);
  assert.equal(clock.cancel(h), false);
  const far = clock.setTimer(clock.now() + 2 ** 40, fail); // beyond setTimeout's 2^31-1 ms limit
  assert.equal(clock.cancel(far), true);
  const p = clock.every(60_000, fail, { phase: 7 });
  assert.equal(clock.cancel(p), true);
  assert.equal(new VirtualClock().cancel(p), false);
  clock.setTimer(clock.now() + 60_000, fail);
  clock.close();
  assert.throws(() => clock.setTimer(0, fail), /closed/);
});

test('RealClock speed: rejects a non-positive speed; a timer an hour of fast time ahead is scheduled and cancelled', () => {
  assert.throws(() => new RealClock({ speed: 0 }), RangeError);
  assert.throws(() => new RealClock({ speed: Number.NaN }), RangeError);
  const fast = new RealClock({ speed: 1000, unref: true });
  const t0 = fast.now();
  // Due one simulated hour from now: at speed 1000 that is 3.6 s of wall time, far below setTimeout's limit.
  const h = fast.setTimer(t0 + 3_600_000, () => assert.fail('must not run'));
  assert.equal(fast.cancel(h), true);
  fast.close();
});
