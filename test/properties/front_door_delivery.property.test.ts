/**
 * Properties: etcd's watch guarantees and the send path's memory bound hold at the two front doors a
 * client meets, whatever speed the client reads at (issue 13, item 2). The engine-level versions are
 * watch_guarantees.property.test.ts and send_window.property.test.ts; here the responses travel the whole
 * way to a client.
 *
 * 1. In-process: `createEtcdSim({ time: 'virtual', seed })` and the raw client (`sim.client()`). A few
 *    watch streams, each with 1–3 watchers (single keys, prefixes, ranges, all keys; start revision 0,
 *    past or future; some with prev_kv or a filter) opened at random points of the run, each read by a
 *    consumer of its own through the stream's async iterator: one that always reads, one that reads k
 *    responses when told to, or one that reads nothing until the end (its EtcdStream stops reading at 16,
 *    the window and the channel fill, its watchers become victims). Writes (puts of small and large values,
 *    bursts, deletes, range deletes, txns, rare compactions) through `c.kv`, stream-wide progress requests,
 *    and virtual time through `await sim.advance(ms)`. After every write and every step, each open
 *    WatchCall's stream holds at most 128 responses in its channel and at most window + one response in
 *    its transport. At the end every consumer reads everything, time passes until no watcher is unsynced
 *    or a victim, and every watcher's responses are judged by src/watch/guarantees.ts against the
 *    committed history, as drained to the current revision unless a compaction canceled it. Deterministic
 *    per seed (a third test runs samples twice and compares the transcripts byte for byte).
 *
 * 2. Over gRPC: `serve({ port: 0, clock: new VirtualClock() })`, writes through a unary client
 *    (connectEtcd), and raw grpc-js Watch calls, each on a connection of its own, with a 'data' listener;
 *    some calls are paused and resumed at random (`call.pause()` / `call.resume()`). Virtual time moves
 *    instant by instant with the server flushed at each, and real event-loop turns (setImmediate turns
 *    around one real 1 ms timer, as test/etcd3/target.ts settles) let the socket work. The same bounds are
 *    asserted on every server-side call — paused or not — after every step and write, and the same
 *    guarantees on what each watcher received once everything drained. Timing varies with the host; the
 *    assertions hold for every interleaving.
 *
 * Runs: ETCDSIM_NUM_RUNS (defaults 100 in-process, 10 over gRPC). Replay: ETCDSIM_SEED=<seed>
 * ETCDSIM_PATH=<path> (printed on failure, see harness.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import fc from 'fast-check';
import * as grpc from '@grpc/grpc-js';

import { createEtcdSim } from '../../src/index.js';
import { connectEtcd } from '../../src/grpc/client.js';
import { serve } from '../../src/grpc/server.js';
import { etcdService } from '../../src/grpc/index.js';
import type { WatchCall } from '../../src/server/index.js';
import type * as M from '../../src/server/messages.js';
import { VirtualClock } from '../../src/sim/index.js';
import type { WatchCreateRequest, WatchFilter, WatchResponse } from '../../src/watch/index.js';
import { watchResponseSize } from '../../src/watch/fragment.js';
import { checkWatch, formatViolations, isProgressNotify, recordHistory, type CommittedHistory } from '../../src/watch/guarantees.js';
import { checkAsyncProperty, numRuns } from './harness.js';
import { b, jsonBytes, KEYS, PREFIX, PREFIX_END, responseIn } from './watch_harness.js';

const FILE = 'test/properties/front_door_delivery.property.test.ts';
/** etcd's chanBufLen: the bound of every stream's channel at both front doors. */
const CHANNEL = 128;
/** Default runs of each property (ETCDSIM_NUM_RUNS overrides both). */
const IN_PROCESS_RUNS = 100;
const GRPC_RUNS = 10;

// ---------------------------------------------------------------------------------------------------
// Workload

type StartSpec = { readonly k: 'zero' } | { readonly k: 'past'; readonly back: number } | { readonly k: 'future'; readonly ahead: number };

interface WatchSpec {
  readonly key: string;
  readonly end: string | undefined;
  readonly start: StartSpec;
  readonly prevKv: boolean;
  readonly filters: readonly WatchFilter[];
  /** Opened just before this step (mod the number of steps; the first watcher of a stream at step 0). */
  readonly at: number;
}

type Write =
  | { readonly op: 'put'; readonly key: string; readonly size: number }
  | { readonly op: 'del'; readonly key: string }
  | { readonly op: 'delRange'; readonly key: string; readonly end: string }
  | { readonly op: 'txn'; readonly puts: readonly { readonly key: string; readonly size: number }[]; readonly dels: readonly string[] };

const keyArb = fc.constantFrom(...KEYS);
/** Mostly small values, some large enough that a few responses fill a window. */
const sizeArb = fc.oneof({ weight: 3, arbitrary: fc.nat({ max: 40 }) }, { weight: 1, arbitrary: fc.integer({ min: 200, max: 3000 }) });

const writeArb: fc.Arbitrary<Write> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant('put' as const), key: keyArb, size: sizeArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('del' as const), key: keyArb }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      { op: 'delRange' as const, key: PREFIX, end: PREFIX_END },
      { op: 'delRange' as const, key: '/p/1', end: '/p/3' },
      { op: 'delRange' as const, key: '/p', end: '\0' },
    ),
  },
  {
    weight: 2,
    arbitrary: fc
      .record({
        puts: fc.uniqueArray(fc.record({ key: keyArb, size: sizeArb }), { minLength: 1, maxLength: 4, selector: (p) => p.key }),
        dels: fc.uniqueArray(keyArb, { maxLength: 2 }),
      })
      .map(({ puts, dels }) => ({ op: 'txn' as const, puts, dels: dels.filter((d) => !puts.some((p) => p.key === d)) })),
  },
);

const rangeArb: fc.Arbitrary<{ key: string; end: string | undefined }> = fc.oneof(
  fc.constantFrom(...KEYS).map((key) => ({ key, end: undefined })),
  fc.constant({ key: PREFIX, end: PREFIX_END }),
  fc.constant({ key: PREFIX, end: PREFIX_END }),
  fc.constant({ key: '/p/1', end: '/p/3' }),
  fc.constant({ key: '', end: '\0' }),
  fc.constant({ key: '/p', end: '\0' }),
);

const startArb: fc.Arbitrary<StartSpec> = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ k: 'zero' as const }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('past' as const), back: fc.nat({ max: 30 }) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('future' as const), ahead: fc.integer({ min: 1, max: 20 }) }) },
);

const watchSpecArb: fc.Arbitrary<WatchSpec> = fc
  .record({
    range: rangeArb,
    start: startArb,
    prevKv: fc.boolean(),
    filters: fc.oneof({ weight: 4, arbitrary: fc.constant([] as WatchFilter[]) }, { weight: 1, arbitrary: fc.constantFrom<WatchFilter[]>(['NOPUT'], ['NODELETE']) }),
    at: fc.nat({ max: 60 }),
  })
  .map(({ range, ...rest }) => ({ key: range.key, end: range.end, ...rest }));

/** How a stream's consumer reads: always, only when a step says so, or not until the end. */
type ReadMode = 'always' | 'steps' | 'never';

interface StreamSpec {
  readonly mode: ReadMode;
  readonly watches: readonly WatchSpec[];
}

const streamSpecArb: fc.Arbitrary<StreamSpec> = fc.record({
  mode: fc.constantFrom<ReadMode>('always', 'steps', 'steps', 'never'),
  watches: fc.array(watchSpecArb, { minLength: 1, maxLength: 3 }),
});

/** The revision a start spec means when the store is at `cur`. */
function startRevision(s: StartSpec, cur: number): number {
  return s.k === 'zero' ? 0 : s.k === 'past' ? Math.max(1, cur - s.back) : cur + s.ahead;
}

/** The value of a put: recognisable, `size` bytes. */
function value(key: string, size: number, rev: number): Buffer {
  const head = `${key}@${rev}:`;
  return Buffer.from(head.length >= size ? head.slice(0, size) : head.padEnd(size, '.'), 'latin1');
}

/** The KV calls a write needs: the raw client's `c.kv` and connectEtcd's `kv` both fit (requests in message form, bytes as Buffers). */
type KvLike = {
  put(req: M.PutRequest): Promise<unknown>;
  deleteRange(req: M.DeleteRangeRequest): Promise<unknown>;
  txn(req: M.TxnRequest): Promise<unknown>;
};

const buf = (s: string): Buffer => Buffer.from(s, 'latin1');

async function applyWrite(kv: KvLike, w: Write, rev: number): Promise<void> {
  switch (w.op) {
    case 'put':
      await kv.put({ key: buf(w.key), value: value(w.key, w.size, rev) });
      return;
    case 'del':
      await kv.deleteRange({ key: buf(w.key) });
      return;
    case 'delRange':
      await kv.deleteRange({ key: buf(w.key), range_end: buf(w.end) });
      return;
    case 'txn':
      await kv.txn({
        success: [
          ...w.puts.map((p) => ({ request_put: { key: buf(p.key), value: value(p.key, p.size, rev) } })),
          ...w.dels.map((d) => ({ request_delete_range: { key: buf(d) } })),
        ],
      });
      return;
  }
}

// ---------------------------------------------------------------------------------------------------
// The client side: responses back in the engine's form, routed to their watchers


interface WatchRecord {
  readonly spec: WatchSpec;
  readonly req: WatchCreateRequest;
  readonly responses: WatchResponse[];
  id: number | undefined;
  canceled: boolean;
}

/**
 * One stream's responses, routed as a client routes them: created responses answer the creates in order,
 * a stream-wide progress notification (watch ID -1) goes to every watcher already created and not
 * canceled, everything else to its watcher by ID. Anything unroutable is a problem.
 */
class Router {
  readonly records: WatchRecord[] = [];
  private readonly awaiting: WatchRecord[] = [];
  private readonly live = new Map<number, WatchRecord>();
  /** Every response, in order (for the transcript and the transport bound). */
  readonly all: WatchResponse[] = [];
  largest = 0;
  readonly problems: string[] = [];

  constructor(readonly index: number) {}

  /** A create request is about to be sent for this watcher. */
  expect(spec: WatchSpec, req: WatchCreateRequest): WatchRecord {
    const rec: WatchRecord = { spec, req, responses: [], id: undefined, canceled: false };
    this.records.push(rec);
    this.awaiting.push(rec);
    return rec;
  }

  get awaitingCreated(): number {
    return this.awaiting.length;
  }

  route(m: M.WatchResponse): void {
    const r = responseIn(m);
    this.all.push(r);
    this.largest = Math.max(this.largest, watchResponseSize(r));
    if (r.created) {
      const rec = this.awaiting.shift();
      if (rec === undefined) {
        this.problems.push(`stream ${this.index}: a created response nobody asked for: ${JSON.stringify(r, jsonBytes)}`);
        return;
      }
      rec.id = r.watchId;
      rec.responses.push(r);
      if (r.canceled) rec.canceled = true;
      else this.live.set(r.watchId, rec);
      return;
    }
    if (r.watchId === -1) {
      if (isProgressNotify(r)) for (const rec of this.live.values()) rec.responses.push(r);
      else this.problems.push(`stream ${this.index}: a response with watch ID -1 that is no progress notification: ${JSON.stringify(r, jsonBytes)}`);
      return;
    }
    const rec = this.live.get(r.watchId);
    if (rec === undefined) {
      this.problems.push(`stream ${this.index}: a response for watch ${r.watchId}, which is not open: ${JSON.stringify(r, jsonBytes)}`);
      return;
    }
    rec.responses.push(r);
    if (r.canceled) {
      rec.canceled = true;
      this.live.delete(r.watchId);
    }
  }
}

function createRequest(spec: WatchSpec, cur: number): { domain: WatchCreateRequest; msg: M.WatchCreateRequest } {
  const start = startRevision(spec.start, cur);
  const domain: WatchCreateRequest = {
    key: b(spec.key),
    ...(spec.end === undefined ? {} : { rangeEnd: b(spec.end) }),
    startRevision: start,
    prevKv: spec.prevKv,
    filters: spec.filters,
  };
  const msg: M.WatchCreateRequest = {
    key: buf(spec.key),
    ...(spec.end === undefined ? {} : { range_end: buf(spec.end) }),
    start_revision: String(start),
    prev_kv: spec.prevKv,
    filters: [...spec.filters],
  };
  return { domain, msg };
}

/** Judges every watcher of every stream; throws one error listing every violation. */
function judge(history: CommittedHistory, routers: readonly Router[], current: number): void {
  const problems: string[] = routers.flatMap((r) => r.problems);
  for (const router of routers) {
    for (const rec of router.records) {
      if (rec.id === undefined) {
        problems.push(`stream ${router.index}: watch ${JSON.stringify(rec.req, jsonBytes)} never got its created response`);
        continue;
      }
      const v = checkWatch(history, rec.req, rec.responses, { drainedThrough: rec.canceled ? undefined : current });
      if (v.length > 0) {
        problems.push(
          `stream ${router.index}, watch ${rec.id} ${JSON.stringify(rec.req, jsonBytes)}${rec.canceled ? ' (canceled)' : ''}:\n` +
            `    ${formatViolations(v).split('\n').join('\n    ')}\n` +
            `    responses: ${rec.responses.map((r) => JSON.stringify(r, jsonBytes)).join('\n               ')}`,
        );
      }
    }
  }
  if (problems.length > 0) throw new Error(`${problems.join('\n')}\n  (current revision ${current})`);
}

/**
 * The memory bound of one server-side Watch call: the channel holds at most 128 responses, the transport
 * at most one window plus one response. The transport's largest value is remembered per call and checked
 * once the client has read everything (the response that crossed the window is among what it read).
 */
class Bounds {
  private readonly maxTransport = new Map<WatchCall, number>();
  maxChannel = 0;
  victimsSeen = false;
  pausedSeen = false;

  observe(calls: readonly WatchCall[], victims: readonly ReadonlyMap<unknown, unknown>[]): void {
    if (victims.length > 0) this.victimsSeen = true;
    // A victim holds one batch (etcd: at most 1000 revisions of its events) until it is retried.
    let held = 0;
    for (const batch of victims) held += batch.size;
    let watchers = 0;
    for (const call of calls) watchers += call.stream.watchIds().length;
    assert.ok(held <= watchers, `${held} victim batches held for ${watchers} watchers`);
    for (const call of calls) {
      const st = call.stream;
      if (call.isPaused) this.pausedSeen = true;
      assert.ok(st.channelLength <= CHANNEL, `a watch stream's channel holds ${st.channelLength} responses (> ${CHANNEL})`);
      this.maxChannel = Math.max(this.maxChannel, st.channelLength);
      this.maxTransport.set(call, Math.max(this.maxTransport.get(call) ?? 0, st.inTransport.bytes));
    }
  }

  /** After the drain: the transport never held more than windowBytes + the largest response its client read. */
  checkTransport(call: WatchCall, router: Router): void {
    const max = this.maxTransport.get(call) ?? 0;
    const bound = call.stream.windowBytes + router.largest;
    assert.ok(max <= bound, `stream ${router.index}: its transport held ${max} B, more than the window (${call.stream.windowBytes} B) plus its largest response (${router.largest} B)`);
  }
}

/** Across the runs of a property: did the workloads reach the states the bounds are about? */
interface Coverage {
  runs: number;
  victims: number;
  fullChannel: number;
  paused: number;
  /** Runs in which a compaction canceled a watcher. */
  compacted: number;
}

const replaying = (): boolean => (process.env['ETCDSIM_PATH'] ?? '') !== '';

/**
 * checkAsyncProperty, with a hint on failure: a seed and path belong to one property, so a replay runs
 * that property alone (the other one would fail with "Unable to replay").
 */
async function check<Ts>(property: fc.IRawProperty<Ts, true>, runs: number, namePattern: string): Promise<void> {
  try {
    await checkAsyncProperty(property, { file: FILE, numRuns: runs });
  } catch (err) {
    if (!(err instanceof Error)) throw err;
    err.message += `\n  (add --test-name-pattern='${namePattern}' to the replay command to run this property alone)`;
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------------
// 1. In-process: sim.client()

type Step =
  | { readonly t: 'write'; readonly w: Write }
  | { readonly t: 'burst'; readonly key: number; readonly n: number; readonly size: number }
  | { readonly t: 'compact'; readonly back: number }
  | { readonly t: 'read'; readonly s: number; readonly n: number }
  | { readonly t: 'progress'; readonly s: number }
  | { readonly t: 'advance'; readonly ms: number };

const inProcessStepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 8, arbitrary: writeArb.map((w) => ({ t: 'write' as const, w })) },
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constant('burst' as const), key: fc.nat({ max: KEYS.length - 1 }), n: fc.integer({ min: 1, max: 150 }), size: sizeArb }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('compact' as const), back: fc.integer({ min: 0, max: 10 }) }) },
  { weight: 5, arbitrary: fc.record({ t: fc.constant('read' as const), s: fc.nat({ max: 2 }), n: fc.integer({ min: 1, max: 40 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('progress' as const), s: fc.nat({ max: 2 }) }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 300 }) }) },
);

interface InProcessConfig {
  readonly seed: number;
  /** The transport window: etcd's 64 KiB (undefined), or smaller so that short runs fill it. */
  readonly window: number | undefined;
  readonly streams: readonly StreamSpec[];
}

const inProcessConfigArb: fc.Arbitrary<InProcessConfig> = fc.record({
  seed: fc.integer(),
  window: fc.constantFrom(undefined, 1024, 8192),
  streams: fc.array(streamSpecArb, { minLength: 1, maxLength: 3 }),
});

/**
 * The consumer of one stream: a loop over the stream's async iterator that takes a response only while it
 * has budget. Without budget it does not call next(), so the EtcdStream buffers 16 and stops reading.
 */
class Consumer {
  private budget: number;
  private wake: (() => void) | undefined;
  failure: unknown;

  constructor(
    stream: AsyncIterable<M.WatchResponse>,
    readonly mode: ReadMode,
    private readonly router: Router,
  ) {
    this.budget = mode === 'always' ? Number.POSITIVE_INFINITY : 0;
    void this.run(stream[Symbol.asyncIterator]());
  }

  grant(n: number): void {
    this.budget += n;
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private async run(it: AsyncIterator<M.WatchResponse>): Promise<void> {
    try {
      for (;;) {
        while (this.budget <= 0) await new Promise<void>((resolve) => (this.wake = resolve));
        const r = await it.next();
        if (r.done === true) return;
        this.budget--;
        this.router.route(r.value);
      }
    } catch (err) {
      this.failure = err;
    }
  }
}

async function runInProcess(cfg: InProcessConfig, steps: readonly Step[], coverage?: Coverage): Promise<string> {
  const sim = createEtcdSim({
    time: 'virtual',
    seed: cfg.seed,
    stallWarningMs: 0,
    ...(cfg.window === undefined ? {} : { watchSendWindowBytes: cfg.window }),
  });
  const { history } = recordHistory(sim.mvcc);
  const c = sim.client();
  const bounds = new Bounds();
  const routers: Router[] = [];
  const consumers: Consumer[] = [];
  const streams: ReturnType<typeof c.watch>[] = [];
  const calls: WatchCall[] = [];
  const observe = (): void => bounds.observe(sim.services.watch.calls(), sim.watchable.victims);
  const failures = (): void => {
    for (const cons of consumers) if (cons.failure !== undefined) throw cons.failure;
    const p = routers.flatMap((r) => r.problems);
    if (p.length > 0) throw new Error(p.join('\n'));
  };
  try {
    // Each stream opens with its first watcher at step 0; the others open at their own step.
    const opening = new Map<number, { s: number; spec: WatchSpec }[]>();
    cfg.streams.forEach((st, s) => {
      const stream = c.watch();
      streams.push(stream);
      calls.push(sim.services.watch.calls().at(-1)!);
      const router = new Router(s);
      routers.push(router);
      consumers.push(new Consumer(stream, st.mode, router));
      st.watches.forEach((spec, i) => {
        const at = i === 0 || steps.length === 0 ? 0 : spec.at % steps.length;
        opening.set(at, [...(opening.get(at) ?? []), { s, spec }]);
      });
    });
    const open = (at: number): void => {
      for (const { s, spec } of opening.get(at) ?? []) {
        const { domain, msg } = createRequest(spec, sim.mvcc.currentRevision);
        routers[s]!.expect(spec, domain);
        streams[s]!.create(msg);
      }
    };
    if (steps.length === 0) open(0);
    for (let i = 0; i < steps.length; i++) {
      open(i);
      const step = steps[i]!;
      switch (step.t) {
        case 'write':
          await applyWrite(c.kv, step.w, sim.mvcc.currentRevision + 1);
          break;
        case 'burst':
          for (let j = 0; j < step.n; j++) {
            const key = KEYS[(step.key + j) % KEYS.length]!;
            await applyWrite(c.kv, { op: 'put', key, size: step.size }, sim.mvcc.currentRevision + 1);
            observe();
          }
          break;
        case 'compact': {
          const rev = sim.mvcc.currentRevision - step.back;
          if (rev > sim.mvcc.compactRevision && rev >= 1) await c.kv.compact({ revision: String(rev) });
          break;
        }
        case 'read': {
          const cons = consumers[step.s % consumers.length]!;
          if (cons.mode === 'steps') {
            cons.grant(step.n);
            await sim.settle();
          }
          break;
        }
        case 'progress':
          streams[step.s % streams.length]!.progress();
          break;
        case 'advance':
          await sim.advance(step.ms);
          break;
      }
      observe();
      failures();
    }

    // Drain: every consumer reads everything; time passes until no watcher is behind.
    for (const cons of consumers) cons.grant(Number.POSITIVE_INFINITY);
    const settled = (): boolean =>
      sim.watchable.unsynced.size === 0 && sim.watchable.victims.length === 0 && calls.every((call) => call.pending === 0 && !call.isPaused);
    await sim.settle();
    for (let round = 0; !settled(); round++) {
      // 100 s of virtual time: at most 1000 revisions per sync step, far fewer revisions here.
      if (round >= 10_000) {
        throw new Error(
          `the store never settled: ${sim.watchable.unsynced.size} unsynced, ${sim.watchable.victims.length} victim batches, ` +
            `pending ${calls.map((call) => call.pending).join('/')}, paused ${calls.map((call) => call.isPaused).join('/')}`,
        );
      }
      await sim.advance(10);
      observe();
      failures();
    }
    await sim.settle();
    observe();
    failures();

    calls.forEach((call, s) => bounds.checkTransport(call, routers[s]!));
    judge(history, routers, sim.mvcc.currentRevision);
    if (coverage !== undefined) {
      coverage.runs++;
      if (bounds.victimsSeen) coverage.victims++;
      if (bounds.maxChannel >= CHANNEL) coverage.fullChannel++;
      if (bounds.pausedSeen) coverage.paused++;
      if (routers.some((r) => r.records.some((rec) => rec.responses.some((x) => x.compactRevision !== 0)))) coverage.compacted++;
    }
    return routers.map((r) => r.all.map((x) => JSON.stringify(x, jsonBytes)).join('\n')).join('\n--\n') + `\n@${sim.mvcc.currentRevision} t=${sim.clock.now()}`;
  } finally {
    c.close();
    for (const cons of consumers) cons.grant(Number.POSITIVE_INFINITY);
    await sim.settle();
    sim.close();
  }
}

const inProcessArbs = [inProcessConfigArb, fc.array(inProcessStepArb, { minLength: 5, maxLength: 60, size: 'max' })] as const;

test('in-process raw client: watch guarantees and the send path\'s memory bound under random read speeds', async (t) => {
  const coverage: Coverage = { runs: 0, victims: 0, fullChannel: 0, paused: 0, compacted: 0 };
  await check(
    fc.asyncProperty(...inProcessArbs, async (cfg, steps) => void (await runInProcess(cfg, steps, coverage))),
    IN_PROCESS_RUNS,
    'in-process raw client: watch guarantees',
  );
  t.diagnostic(
    `runs ${coverage.runs}: a paused client in ${coverage.paused}, a full channel in ${coverage.fullChannel}, victims in ${coverage.victims}, ` +
      `a compaction cancel in ${coverage.compacted}`,
  );
  // The property is about slow readers: with the default run count, some runs must have reached them.
  if (!replaying() && numRuns(IN_PROCESS_RUNS) >= 50) {
    assert.ok(coverage.paused > 0 && coverage.victims > 0 && coverage.fullChannel > 0, `workloads too gentle: ${JSON.stringify(coverage)}`);
  }
});

test('in-process raw client: the same seed and steps give the same responses, byte for byte', async () => {
  const coverage: Coverage = { runs: 0, victims: 0, fullChannel: 0, paused: 0, compacted: 0 };
  const samples = fc.sample(fc.tuple(...inProcessArbs), { numRuns: 10, seed: 1 });
  for (const [cfg, steps] of samples) {
    const first = await runInProcess(cfg, steps, coverage);
    const again = await runInProcess(cfg, steps);
    assert.equal(again, first, `config ${fc.stringify(cfg)}, steps ${fc.stringify(steps)}`);
  }
  assert.ok(coverage.victims > 0, `no sample made victims: ${JSON.stringify(coverage)}`);
});

// ---------------------------------------------------------------------------------------------------
// 2. Over gRPC: serve() on a virtual clock, raw grpc-js Watch calls paused and resumed

type GrpcStep =
  | { readonly t: 'write'; readonly w: Write }
  | { readonly t: 'burst'; readonly key: number; readonly n: number; readonly size: number }
  | { readonly t: 'pause'; readonly s: number }
  | { readonly t: 'resume'; readonly s: number }
  | { readonly t: 'progress'; readonly s: number }
  | { readonly t: 'advance'; readonly ms: number };

/** Over gRPC a paused call holds the client's HTTP/2 window and the server's write quota (64 KiB each) before the stream's own window and channel fill: bursts of large values get there in a few hundred puts. */
const burstSizeArb = fc.oneof(fc.nat({ max: 40 }), fc.integer({ min: 1000, max: 4000 }));

const grpcStepArb: fc.Arbitrary<GrpcStep> = fc.oneof(
  { weight: 5, arbitrary: writeArb.map((w) => ({ t: 'write' as const, w })) },
  {
    weight: 3,
    arbitrary: fc.record({ t: fc.constant('burst' as const), key: fc.nat({ max: KEYS.length - 1 }), n: fc.integer({ min: 1, max: 150 }), size: burstSizeArb }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('pause' as const), s: fc.nat({ max: 2 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('resume' as const), s: fc.nat({ max: 2 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('progress' as const), s: fc.nat({ max: 2 }) }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 300 }) }) },
);

interface GrpcConfig {
  readonly seed: number;
  /** Puts before the watchers open, so that past start revisions replay history. */
  readonly before: number;
  readonly streams: readonly { readonly watches: readonly WatchSpec[]; readonly pausedAtStart: boolean }[];
}

const grpcConfigArb: fc.Arbitrary<GrpcConfig> = fc.record({
  seed: fc.integer(),
  before: fc.nat({ max: 20 }),
  streams: fc.array(
    fc.record({ watches: fc.array(watchSpecArb, { minLength: 1, maxLength: 3 }), pausedAtStart: fc.boolean() }),
    { minLength: 1, maxLength: 3 },
  ),
});

/** Real event-loop turns for the socket, as test/etcd3/target.ts's served() settles: setImmediate turns around one real 1 ms timer. */
async function ioTurns(): Promise<void> {
  for (let i = 0; i < 8; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  await new Promise<void>((resolve) => setTimeout(resolve, 1));
  for (let i = 0; i < 8; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Real time a gRPC run may wait for one condition (the socket, the drain) before it fails. */
const GRPC_WAIT_MS = 15_000;

async function until(cond: () => boolean, what: string, tick: () => Promise<void>, detail: () => string = () => ''): Promise<void> {
  const deadline = performance.now() + GRPC_WAIT_MS;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${GRPC_WAIT_MS} ms waiting for ${what}${detail() === '' ? '' : `: ${detail()}`}`);
    await tick();
  }
}

type DuplexWatch = grpc.ClientDuplexStream<M.WatchRequest, M.WatchResponse>;

async function runGrpc(cfg: GrpcConfig, steps: readonly GrpcStep[], coverage: Coverage): Promise<void> {
  const clock = new VirtualClock();
  const handle = await serve({ port: 0, clock, seed: cfg.seed });
  const server = handle.server;
  const { history } = recordHistory(server.mvcc);
  const etcd = connectEtcd(handle.address);
  const Watch = etcdService('Watch');
  const creds = grpc.credentials.createInsecure();
  const clients: grpc.Client[] = [];
  const duplexes: DuplexWatch[] = [];
  const paused: boolean[] = [];
  const routers: Router[] = [];
  const calls: WatchCall[] = [];
  const bounds = new Bounds();
  const errors: string[] = [];
  const observe = (): void => bounds.observe(server.services.watch.calls(), server.watchable.victims);
  const failures = (): void => {
    const p = [...errors, ...routers.flatMap((r) => r.problems)];
    if (p.length > 0) throw new Error(p.join('\n'));
  };
  /** Moves virtual time instant by instant, the server's responses of each instant flushed at it. */
  const advance = (ms: number): void => {
    const to = clock.now() + ms;
    for (let due = clock.nextDue(); due !== undefined && due <= to; due = clock.nextDue()) {
      clock.advanceTo(due);
      server.flush();
    }
    clock.advanceTo(to);
    server.flush();
  };
  try {
    for (let i = 0; i < cfg.before; i++) await applyWrite(etcd.kv, { op: 'put', key: KEYS[i % KEYS.length]!, size: 10 }, server.mvcc.currentRevision + 1);
    // Each stream on a connection of its own, so that an unread stream holds back only itself.
    for (const [s, st] of cfg.streams.entries()) {
      const client = new Watch(handle.address, creds, { 'grpc.use_local_subchannel_pool': 1 });
      clients.push(client);
      const call = (client as unknown as { Watch(): DuplexWatch }).Watch();
      duplexes.push(call);
      const router = new Router(s);
      routers.push(router);
      paused.push(false);
      call.on('data', (r: M.WatchResponse) => router.route(r));
      call.on('error', (err: grpc.ServiceError) => {
        if (err.code !== grpc.status.CANCELLED) errors.push(`stream ${s}: ${err.message}`);
      });
      const before = server.services.watch.calls().length;
      for (const spec of st.watches) {
        const { domain, msg } = createRequest(spec, server.mvcc.currentRevision);
        router.expect(spec, domain);
        call.write({ create_request: msg });
      }
      // grpc-js pauses only a call the application has read from: wait for the created responses.
      await until(() => router.awaitingCreated === 0 || errors.length > 0, `stream ${s}'s created responses`, ioTurns);
      failures();
      const open = server.services.watch.calls();
      assert.equal(open.length, before + 1, 'one server-side call per stream');
      calls.push(open.at(-1)!);
      if (st.pausedAtStart) {
        call.pause();
        paused[s] = true;
      }
    }
    observe();

    for (const step of steps) {
      switch (step.t) {
        case 'write':
          await applyWrite(etcd.kv, step.w, server.mvcc.currentRevision + 1);
          break;
        case 'burst':
          for (let j = 0; j < step.n; j++) {
            const key = KEYS[(step.key + j) % KEYS.length]!;
            await applyWrite(etcd.kv, { op: 'put', key, size: step.size }, server.mvcc.currentRevision + 1);
            observe();
          }
          break;
        case 'pause': {
          const s = step.s % duplexes.length;
          duplexes[s]!.pause();
          paused[s] = true;
          break;
        }
        case 'resume': {
          const s = step.s % duplexes.length;
          duplexes[s]!.resume();
          paused[s] = false;
          break;
        }
        case 'progress':
          duplexes[step.s % duplexes.length]!.write({ progress_request: {} });
          break;
        case 'advance':
          for (let left = step.ms; left > 0; left -= 10) {
            advance(Math.min(10, left));
            observe();
            await ioTurns();
            observe();
          }
          break;
      }
      await ioTurns();
      observe();
      failures();
    }

    // Drain: every call reads again; time passes until the server is settled and every watcher has
    // received every matching event (or was canceled).
    for (const [s, d] of duplexes.entries()) {
      if (paused[s]) d.resume();
      paused[s] = false;
    }
    const current = (): number => server.mvcc.currentRevision;
    const received = (): boolean =>
      routers.every((router) =>
        router.records.every((rec) => {
          if (rec.canceled) return true;
          const last = lastMatching(history, rec, current());
          return last === undefined || rec.responses.some((r) => r.events.some((e) => e.kv.modRevision === last));
        }),
      );
    const settled = (): boolean =>
      server.watchable.unsynced.size === 0 &&
      server.watchable.victims.length === 0 &&
      calls.every((call) => call.pending === 0 && !call.isPaused) &&
      received();
    await until(
      () => settled() || errors.length > 0,
      'every watcher to receive every event',
      async () => {
        advance(10);
        observe();
        await ioTurns();
        observe();
      },
      () =>
        `${server.watchable.unsynced.size} unsynced, ${server.watchable.victims.length} victim batches, pending ${calls.map((call) => call.pending).join('/')}, ` +
        `server paused ${calls.map((call) => call.isPaused).join('/')}, received ${received()}`,
    );
    failures();
    calls.forEach((call, s) => bounds.checkTransport(call, routers[s]!));
    judge(history, routers, current());
    coverage.runs++;
    if (bounds.victimsSeen) coverage.victims++;
    if (bounds.maxChannel >= CHANNEL) coverage.fullChannel++;
    if (bounds.pausedSeen) coverage.paused++;
  } finally {
    for (const d of duplexes) d.cancel();
    for (const client of clients) client.close();
    etcd.close();
    await handle.close();
  }
}

/** The revision of the last change in the history this watcher must receive (undefined: none). */
function lastMatching(history: CommittedHistory, rec: WatchRecord, current: number): number | undefined {
  const created = rec.responses.find((r) => r.created);
  if (created === undefined) return undefined;
  const first = (rec.req.startRevision ?? 0) > 0 ? rec.req.startRevision! : created.revision + 1;
  const key = rec.spec.key.length === 0 ? '\0' : rec.spec.key;
  const end = rec.spec.end;
  const noPut = rec.spec.filters.includes('NOPUT');
  const noDelete = rec.spec.filters.includes('NODELETE');
  let last: number | undefined;
  for (const hr of history.revisions) {
    if (hr.revision < first || hr.revision > current) continue;
    for (const ev of hr.events) {
      if (ev.type === 'PUT' ? noPut : noDelete) continue;
      const k = Buffer.from(ev.kv.key).toString('latin1');
      const inRange = end === undefined ? k === key : k >= key && (end === '\0' || k < end);
      if (inRange) last = hr.revision;
    }
  }
  return last;
}

// About 0.4 s a run on a laptop; the timeout leaves room for a slow host and for shrinking.
const grpcTimeoutMs = 120_000 + numRuns(GRPC_RUNS) * 3_000;

test('gRPC front door: watch guarantees and the send path\'s memory bound with calls paused and resumed at random', { timeout: grpcTimeoutMs }, async (t) => {
  const coverage: Coverage = { runs: 0, victims: 0, fullChannel: 0, paused: 0, compacted: 0 };
  await check(
    fc.asyncProperty(grpcConfigArb, fc.array(grpcStepArb, { minLength: 5, maxLength: 30, size: 'max' }), (cfg, steps) => runGrpc(cfg, steps, coverage)),
    GRPC_RUNS,
    'gRPC front door',
  );
  // How far the runs got depends on the host's timing: reported, not asserted.
  t.diagnostic(`runs ${coverage.runs}: the server stopped writing to a client in ${coverage.paused}, a full channel in ${coverage.fullChannel}, victims in ${coverage.victims}`);
});
