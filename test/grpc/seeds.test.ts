// The seeds' exercises 002 ("a watch that starts in the past") and 003 ("delete the history a watcher is
// still standing in") as scripts: real etcdctl 3.4.23 against `etcdsim serve`, watches running in the
// background as separate etcdctl processes, the observed outputs asserted.
//
// The simulated member runs on a VirtualClock: a watch that starts in the past is registered unsynced and
// replayed only by the watch store's sync step (every 100 ms, at most 1000 revisions per batch), which runs
// only when the test advances the clock. That is what makes 003's "compact while the behind watcher is
// still replaying" deterministic: one sync delivers the first 1000 revisions, the compaction lands before
// the next sync, and that sync cancels the watcher. Exercise 002 runs against a fresh real etcd 3.4.23 too,
// and the two must print the same; so do 003's refused-at-open and boundary steps (on a real etcd the
// replay of 2000 events is over in milliseconds, so its mid-flight step is asserted on the simulator only).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { VirtualClock } from '../../src/sim/index.js';
import { ctl, beforeFreshSimAndEtcd, type Target } from './etcdctl_helpers.js';
import { requireCommands } from '../support/prerequisites.js';
import { B, RawClient } from './helpers.js';

const skip = requireCommands(['etcd', 'etcdctl']);

/** One simulated member on a virtual clock, one real etcd: both fresh, so their revisions match. */
let sim: Target;
let etcd: Target;
const clock = new VirtualClock();
beforeFreshSimAndEtcd((s, e) => {
  sim = s;
  etcd = e;
}, { clock });

/** Lets `ms` of virtual time pass on the simulated member (watch sync steps run); nothing on a real etcd. */
function tick(t: Target, ms: number): void {
  if (t.handle === undefined) return;
  clock.advance(ms);
  t.handle.server.flush();
}

/** etcdctl `watch ...` in the background, like a second terminal. */
class BackgroundWatch {
  out = '';
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly exit: Promise<number | null>;
  private readonly waiters = new Set<() => void>();

  constructor(
    readonly t: Target,
    args: string[],
  ) {
    this.child = spawn('etcdctl', [`--endpoints=${t.address}`, 'watch', ...args], { env: { ...process.env, ETCDCTL_API: '3' } });
    const onData = (d: Buffer): void => {
      this.out += d.toString();
      for (const w of [...this.waiters]) w();
    };
    this.child.stdout.on('data', onData);
    this.child.stderr.on('data', onData);
    this.exit = new Promise((resolve) => this.child.on('close', (code) => resolve(code)));
  }

  /** Resolves once the output satisfies `cond` (fails after a 15 s guard, printing what arrived). */
  until(cond: (out: string) => boolean, what: string): Promise<void> {
    if (cond(this.out)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!cond(this.out)) return;
        clearTimeout(guard);
        this.waiters.delete(check);
        resolve();
      };
      const guard = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`${this.t.name}: waiting for ${what}; the watch printed ${JSON.stringify(this.out.slice(-600))}`));
      }, 15_000);
      this.waiters.add(check);
    });
  }

  /** Waits for etcdctl to exit by itself; resolves with its exit code. */
  exited(): Promise<number | null> {
    return this.exit;
  }

  /** Stops it (Ctrl-C) and returns everything it printed. */
  async stop(): Promise<string> {
    this.child.kill('SIGINT');
    await this.exit;
    return this.out;
  }
}

/** Waits until the member has `n` watchers registered (sim: its watch store; etcd: its metrics). */
async function watchers(t: Target, n: number): Promise<void> {
  const deadline = performance.now() + 30_000; // a failure guard only
  let seen = NaN;
  while (performance.now() < deadline) {
    if (t.handle !== undefined) {
      const w = t.handle.server.watchable;
      seen = w.synced.size + w.unsynced.size;
      if (seen === n) return;
      await new Promise<void>((r) => setImmediate(r));
    } else {
      const text = await (await fetch(`http://${t.address}/metrics`)).text();
      seen = Number(/^etcd_debugging_mvcc_watcher_total (\d+)/m.exec(text)?.[1]);
      if (seen === n) return;
    }
  }
  throw new Error(`${t.name}: never saw ${n} watchers registered (last count: ${seen})`);
}

const revisionOf = (json: string): number => {
  const m = /"revision":(\d+)/.exec(json);
  if (m?.[1] === undefined) throw new Error(`no revision in ${json}`);
  return Number(m[1]);
};

/** etcdctl's simple output of events: TYPE, key, value, one line each. */
const events = (...evs: Array<[string, string, string]>): string => evs.map(([ty, k, v]) => `${ty}\n${k}\n${v}\n`).join('');

async function put(t: Target, key: string, value: string): Promise<void> {
  assert.deepEqual(await ctl(t, ['put', key, value]), { code: 0, out: 'OK\n' });
}

/** Exercise 002 on one target; returns what every step printed. */
async function exercise002(t: Target): Promise<Record<string, string>> {
  const seen: Record<string, string> = {};
  // 1. a starting point, and history after it
  const start = await ctl(t, ['put', '/w/start', 'x', '-w', 'json']);
  const R = revisionOf(start.out);
  for (let i = 1; i <= 5; i++) await put(t, `/w/k${i}`, String(i));
  seen['del'] = (await ctl(t, ['del', '/w/k3'])).out;

  // 2. a watch from R, left running; then a live put from "a second terminal"
  const w = new BackgroundWatch(t, ['--prefix', '/w/', `--rev=${R}`]);
  await watchers(t, 1);
  tick(t, 100); // the sync step replays the history
  const replay = events(['PUT', '/w/start', 'x'], ['PUT', '/w/k1', '1'], ['PUT', '/w/k2', '2'], ['PUT', '/w/k3', '3'], ['PUT', '/w/k4', '4'], ['PUT', '/w/k5', '5'], ['DELETE', '/w/k3', '']);
  await w.until((o) => o.length >= replay.length, 'the replay');
  seen['replay'] = w.out;
  await put(t, '/w/k9', 'live');
  await w.until((o) => o.endsWith('/w/k9\nlive\n'), 'the live event');
  seen['watch'] = await w.stop();
  await watchers(t, 0);

  // 3. the replay: the write at R is in it, the delete is an event (no value), then the live event
  assert.equal(seen['watch'], replay + events(['PUT', '/w/k9', 'live']));

  // 4. resume from the revision of the last event received: it comes again (a duplicate, not a loss)
  const last = revisionOf((await ctl(t, ['get', '/w/k9', '-w', 'json'])).out);
  assert.equal(last, R + 7);
  const resumed = new BackgroundWatch(t, ['--prefix', '/w/', `--rev=${last}`]);
  await watchers(t, 1);
  tick(t, 100);
  await resumed.until((o) => o.endsWith('/w/k9\nlive\n'), 'the resumed replay');
  seen['resume'] = await resumed.stop();
  await watchers(t, 0);
  assert.equal(seen['resume'], events(['PUT', '/w/k9', 'live']));

  // 5. the future: accepted, and it waits (a write now is below its start revision)
  const future = new BackgroundWatch(t, ['--prefix', '/w/', '--rev=999999999']);
  await watchers(t, 1);
  await put(t, '/w/k10', 'now');
  tick(t, 1000);
  if (t.handle !== undefined) {
    const synced = [...t.handle.server.watchable.synced.watchers];
    assert.deepEqual(synced.map((x) => x.minRev), [999999999], 'a future watch waits, synced, for its start revision');
  }
  // a later command has completed: had the watch been sent the put, etcdctl would have had time to print it
  await ctl(t, ['get', '/w/k10']);
  seen['future'] = await future.stop();
  await watchers(t, 0);
  assert.equal(seen['future'], '');

  // teardown
  seen['teardown'] = (await ctl(t, ['del', '--prefix', '/w/'])).out;
  return seen;
}

test('exercise 002: a watch from R replays R itself, deletes as events, then live; resuming repeats the last event; the future waits', { skip }, async () => {
  const a = await exercise002(etcd);
  const b = await exercise002(sim);
  assert.deepEqual(b, a);
  assert.equal(b['teardown'], '7\n'); // start, k1, k2, k4, k5, k9, k10
});

/** How many puts exercise 003 makes (the seed's 2000: two sync batches of at most 1000 revisions). */
const HISTORY = 2000;

/** 003's setup on one target: an anchor at A, then HISTORY puts of one key (over gRPC, in batches of 100:
 *  2000 etcdctl processes would take a minute); returns A and the revision N after them. */
async function setup003(t: Target): Promise<{ A: number; N: number }> {
  await put(t, '/evict/anchor', '0');
  const A = revisionOf((await ctl(t, ['get', '/evict/anchor', '-w', 'json'])).out);
  const kv = new RawClient(t.address, 'KV');
  try {
    for (let i = 1; i <= HISTORY; i += 100) {
      const batch: Promise<unknown>[] = [];
      for (let j = i; j < i + 100 && j <= HISTORY; j++) batch.push(kv.unary('Put', { key: B('/evict/k'), value: B(String(j)) }));
      await Promise.all(batch);
    }
  } finally {
    kv.close();
  }
  const N = revisionOf((await ctl(t, ['endpoint', 'status', '-w', 'json'])).out);
  return { A, N };
}

/** Runs `etcdctl watch --prefix /evict/ --rev=<rev>` until its first line (or its exit); returns the first
 *  line, what it printed when it ended by itself, and its exit code (null when it was still running). */
async function watchFirstLine(t: Target, rev: number): Promise<{ first: string; code: number | null }> {
  const w = new BackgroundWatch(t, ['--prefix', '/evict/', `--rev=${rev}`]);
  if (t.handle !== undefined) {
    await watchers(t, 1);
    tick(t, 100); // the sync step: replay from rev, or the cancel of a compacted start revision
  }
  await w.until((o) => o.includes('\n'), 'a first line');
  const first = w.out.split('\n')[0] ?? '';
  // a canceled watch ends by itself (after its "Error: ..." line): wait for its exit code; a live one is stopped
  const code = first.startsWith('watch was canceled') ? await w.exited() : (await w.stop(), null);
  await watchers(t, 0);
  return { first, code };
}

test('exercise 003: compacting past a watcher still replaying ends it with ErrCompacted; the current watcher never notices; the boundary is the compaction revision', { skip }, async () => {
  const [s, e] = [await setup003(sim), await setup003(etcd)];
  assert.deepEqual(s, e, 'both histories have the same revisions');
  const { A, N } = s;
  assert.equal(N, A + HISTORY);
  const t = sim;

  // 1. two watches on the prefix: behind (from A) and current
  const behind = new BackgroundWatch(t, ['--prefix', '/evict/', `--rev=${A}`]);
  await watchers(t, 1);
  const current = new BackgroundWatch(t, ['--prefix', '/evict/']);
  await watchers(t, 2);
  const w = t.handle?.server.watchable;
  assert.ok(w !== undefined);
  assert.equal(w.unsynced.size, 1, 'the behind watcher waits for the sync step');
  // one sync step: the first batch of the replay (anchor .. A+999); the watcher is still behind
  tick(t, 100);
  const firstBatch = events(['PUT', '/evict/anchor', '0'], ...Array.from({ length: 999 }, (_, i): [string, string, string] => ['PUT', '/evict/k', String(i + 1)]));
  await behind.until((o) => o.length >= firstBatch.length, 'the first replay batch');
  assert.equal(behind.out, firstBatch);
  assert.equal(w.unsynced.size, 1, 'still replaying');

  // 2. compact past its position, before the next sync step (the real etcd gets the same compaction)
  for (const x of [sim, etcd]) assert.deepEqual(await ctl(x, ['compact', String(N - 10)]), { code: 0, out: `compacted revision ${N - 10}\n` });
  tick(t, 100);

  // 3. the behind watcher ends — its exact text and exit status — while the current one keeps delivering
  const code = await behind.exited();
  assert.equal(behind.out.slice(firstBatch.length), 'watch was canceled (etcdserver: mvcc: required revision has been compacted)\nError: watch is canceled by the server\n');
  assert.equal(code, 5);
  for (const x of [sim, etcd]) await put(x, '/evict/after', 'live');
  await current.until((o) => o.endsWith('/evict/after\nlive\n'), "the current watcher's live event");
  assert.equal(await current.stop(), events(['PUT', '/evict/after', 'live']), 'the current watcher never noticed the compaction');
  await watchers(t, 0);

  // 4. a watch from A now: refused at open, with the same text; and 5. the boundary — the same on a real etcd
  const steps = async (x: Target): Promise<unknown> => {
    const reopen = await watchFirstLine(x, A);
    const boundary: string[] = [];
    for (const r of [N - 12, N - 11, N - 10, N - 9]) boundary.push(`${r}: ${(await watchFirstLine(x, r)).first}`);
    return { reopen, boundary };
  };
  const simSteps = await steps(sim);
  assert.deepEqual(simSteps, await steps(etcd));
  const canceled = 'watch was canceled (etcdserver: mvcc: required revision has been compacted)';
  assert.deepEqual(simSteps, {
    reopen: { first: canceled, code: 5 },
    boundary: [`${N - 12}: ${canceled}`, `${N - 11}: ${canceled}`, `${N - 10}: PUT`, `${N - 9}: PUT`],
  });

  // teardown
  for (const x of [sim, etcd]) assert.deepEqual(await ctl(x, ['del', '--prefix', '/evict/']), { code: 0, out: '3\n' }); // anchor, k, after
});
