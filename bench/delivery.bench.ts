/**
 * Watch delivery as a client sees it (issue 13, "Speed and memory"), each row against a real etcd started by
 * the bench in the same run (a local `etcd` binary: fresh data dir, loopback, stopped afterwards):
 *
 *  1. In-process etcd3 watch delivery, default mode, nobody calling advance(): a prefix Watcher made with
 *     etcd3 on `createEtcdSim()` (defaults) and `sim.etcd3()`; 10k puts issued 64 at a time; the time from the
 *     first put until the Watcher has emitted every one of the 10k 'put' events. Baseline: the same program
 *     (same etcd3 calls) against the real etcd over loopback. Target ≤ 0.02 (50× etcd's speed). A simulator
 *     round whose Watcher stops making progress for STALL_MS is cut off and the row shows ∞ (the note says
 *     how many events arrived).
 *
 *  2. Over gRPC, a slow consumer: `etcdsim serve` as its own process (as users run it) and the real etcd,
 *     each driven by the same grpc-js program: 99 reading watchers (one Watch stream each, a prefix watch,
 *     spread over READER_CONNS connections) and one watcher on its own connection whose Watch stream is
 *     paused after its `created` response and never read again; then 10k puts of 200 B, 16 in flight.
 *     Two rows:
 *      - the server process's peak RSS: VmHWM from /proc/PID/status, read after the readers drained (a
 *        fresh server per round, so the peak is this load's); VmRSS is also sampled every 100 ms (note);
 *      - reader drain time: from the last put's response until every reader has received the last put's
 *        event (0 for a reader that had it already). The note gives how many responses per reader carried
 *        the events (etcd batches: one response can carry many events), and what the never-reading watcher
 *        got once resumed after the measurement.
 *     Targets: ratio ≤ 1 (at most etcd's) for both.
 *
 * The gRPC clients decode only what they count (a small protobuf wire scanner for WatchResponse: events,
 * the last event's mod_revision, created/canceled), so the client's own decoding cost stays small next to
 * what the servers do, and is the same for both.
 *
 * Without an etcd binary the rows show etcdsim alone (baseline = subject, ratio 1, noted). Every child
 * process is stopped on every path: try/finally per server, SIGKILL on process exit, and while this
 * section runs, SIGINT/SIGTERM kill the children before the bench exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { etcdPackageDefinition } from '../src/proto/index.js';
import { Etcd3 } from 'etcd3';
import { freePort, hasEtcdBinary, startEtcd, type EtcdProcess } from '../src/diff/etcd_process.js';
import { createEtcdSim, type EtcdSim } from '../src/index.js';
import { collectGarbage, FastRandom, formatBytes, formatNs, type BenchContext, type BenchSection, type Row, type Sample } from './harness.js';

interface Sizes {
  /** Row 1: puts (= events) per round, and timed rounds per side. */
  readonly events: number;
  readonly rounds: number;
  /** Row 2: puts per round, and rounds per side (each with fresh server processes). */
  readonly slowPuts: number;
  readonly slowRounds: number;
}
const FULL: Sizes = { events: 10_000, rounds: 5, slowPuts: 10_000, slowRounds: 3 };
const QUICK: Sizes = { events: 10_000, rounds: 1, slowPuts: 2_000, slowRounds: 1 };

const IN_FLIGHT = 64;
/** Untimed full-size rounds before the simulator's timed ones (JIT warm-up; see the in-process row). */
const SIM_WARMUP_ROUNDS = 3;
const SLOW_IN_FLIGHT = 16;
const READERS = 99;
const READER_CONNS = 4;
const VALUE_BYTES = 200;
/** A side whose watchers make no progress for this long is cut off (and reported as such). */
const STALL_MS = 10_000;
/** How long the never-reading watcher gets, once resumed, to catch up (the note's last figure). */
const CATCH_UP_MS = 30_000;
/** A put unanswered for this long fails the round (a server that stopped answering). */
const PUT_DEADLINE_MS = 60_000;
const PREFIX = 'etcdsim-bench-delivery/';
const VALUE = Buffer.from('value-0123456789-value-0123456789');
const ROOT = fileURLToPath(new URL('../', import.meta.url));

const now = (): number => performance.now();
const key = (p: string, i: number): string => `${p}${String(i).padStart(6, '0')}`;
const perSecond = (nsPerOp: number): string => (Number.isFinite(nsPerOp) ? `${Math.round(1e9 / nsPerOp).toLocaleString('en-US')}/s` : '—');

function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** A side's figures: the median of its rounds; `ops` is what one round's figure is per (events, or 1). */
function sampleOf(values: readonly number[], ops = 1): Sample {
  return { nsPerOp: median(values), rounds: values, ops };
}

/** Runs `n` async ops with at most `inFlight` outstanding. */
async function pool(n: number, inFlight: number, op: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) await op(next++);
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, n) }, worker));
}

/** Resolves with `p`, or with `fallback` after `ms` (for teardown steps that may hang on a broken side). */
async function within<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<T>((r) => (timer = setTimeout(() => r(fallback), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Waits until `done()`; fails (resolves false) once `progress()` has not changed for `stallMs`, or on
 * `cancel()`. The caller calls the returned `poke` when something arrived, so completion is seen at once
 * (no polling delay).
 */
function progressWait(
  done: () => boolean,
  progress: () => number,
  stallMs: number,
): { finished: Promise<boolean>; poke: () => void; cancel: () => void } {
  let resolve!: (ok: boolean) => void;
  const finished = new Promise<boolean>((r) => (resolve = r));
  let last = progress();
  let lastAt = now();
  let over = false;
  const finish = (ok: boolean): void => {
    if (over) return;
    over = true;
    clearInterval(timer);
    resolve(ok);
  };
  const timer = setInterval(() => {
    if (done()) return finish(true);
    const p = progress();
    if (p !== last) {
      last = p;
      lastAt = now();
    } else if (now() - lastAt >= stallMs) finish(false);
  }, 200);
  const poke = (): void => {
    if (!over && done()) finish(true);
  };
  poke();
  return { finished, poke, cancel: () => finish(false) };
}

// ---------------------------------------------------------------------------------------------------
// Child processes: every one is registered until stopped, and killed if the bench exits or is signalled.

const live = new Set<number>();

function killLive(): void {
  for (const pid of live) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
}

/** While the section runs: SIGINT/SIGTERM kill our children, then exit ('exit' hooks remove etcd's data dir). */
function guardSignals(): () => void {
  const onSignal = (sig: NodeJS.Signals): void => {
    killLive();
    process.exit(sig === 'SIGINT' ? 130 : 143);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('exit', killLive);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('exit', killLive);
  };
}

/** A server under test: where it listens and which process holds its memory. */
interface ServerProc {
  readonly name: string;
  readonly address: string;
  readonly pid: number;
  stop(): Promise<void>;
}

async function startRealEtcd(): Promise<ServerProc> {
  const etcd: EtcdProcess = await startEtcd();
  live.add(etcd.pid);
  return {
    name: 'etcd',
    address: etcd.address,
    pid: etcd.pid,
    stop: async () => {
      await etcd.stop();
      live.delete(etcd.pid);
    },
  };
}

/** Whether `bin/etcdsim.js` will run the compiled dist/ (else it compiles src/ with tsx, in the same process). */
function simRunsDist(): boolean {
  const newest = (dir: string): number => {
    let t = 0;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
    }
    return t;
  };
  const stamp = join(ROOT, 'dist', '.build-stamp');
  return existsSync(stamp) && statSync(stamp).mtimeMs >= newest(join(ROOT, 'src'));
}

/** `node bin/etcdsim.js serve` on a free loopback port, as users run it; ready at its endpoint line. */
async function startSimServe(): Promise<ServerProc> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, ['bin/etcdsim.js', 'serve', '--listen-client-urls', `http://127.0.0.1:${port}`], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid !== undefined) live.add(child.pid);
  let log = '';
  const onData = (d: Buffer): void => {
    log = (log + d.toString()).slice(-5000);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const guard = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(guard);
    }
    if (child.pid !== undefined) live.delete(child.pid);
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const guard = setTimeout(() => reject(new Error(`etcdsim serve did not become ready:\n${log.slice(-1500)}`)), 30_000);
      const check = (): void => {
        if (!/etcdsim serving etcd v3 API on /.test(log)) return;
        clearTimeout(guard);
        resolve();
      };
      child.stdout?.on('data', check);
      child.stderr?.on('data', check);
      void exited.then(() => {
        clearTimeout(guard);
        reject(new Error(`etcdsim serve exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${log.slice(-1500)}`));
      });
      child.once('error', (e) => {
        clearTimeout(guard);
        reject(e);
      });
    });
  } catch (e) {
    await stop();
    throw e;
  }
  return { name: 'etcdsim serve', address: `127.0.0.1:${port}`, pid: child.pid ?? -1, stop };
}

/** VmHWM and VmRSS of a process, in bytes (NaN where /proc has no figure). */
function memoryOf(pid: number): { hwm: number; rss: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string): number => {
      const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
      return m === null ? Number.NaN : Number(m[1]) * 1024;
    };
    return { hwm: kb('VmHWM'), rss: kb('VmRSS') };
  } catch {
    return { hwm: Number.NaN, rss: Number.NaN };
  }
}

// ---------------------------------------------------------------------------------------------------
// Row 1: in-process etcd3 watch delivery vs the same program on a real etcd.

interface DeliveryResult {
  /** ns per event, or Infinity when the Watcher stalled. */
  readonly nsPerEvent: number;
  readonly seen: number;
}

/**
 * The program: a prefix Watcher (untimed), then `n` puts with IN_FLIGHT outstanding; timed from the first
 * put until the Watcher has emitted all n 'put' events.
 */
async function deliveryRound(client: Etcd3, prefix: string, n: number): Promise<DeliveryResult> {
  const watcher = await client.watch().prefix(prefix).create();
  let seen = 0;
  const wait = progressWait(
    () => seen >= n,
    () => seen,
    STALL_MS,
  );
  watcher.on('put', () => {
    seen++;
    if (seen >= n) wait.poke();
  });
  collectGarbage();
  const t0 = process.hrtime.bigint();
  await pool(n, IN_FLIGHT, (i) => client.put(key(prefix, i)).value(VALUE).exec());
  wait.poke();
  const ok = await wait.finished;
  const t1 = process.hrtime.bigint();
  await within(watcher.cancel().catch(() => undefined), 2000, undefined);
  return { nsPerEvent: ok ? Number(t1 - t0) / n : Number.POSITIVE_INFINITY, seen };
}

/** Stops the simulator's timers: sim.close() where it exists, else the server's. */
function closeSim(sim: EtcdSim): void {
  const s = sim as EtcdSim & { close?: () => void };
  if (typeof s.close === 'function') s.close();
  else sim.server.close();
}

async function simDeliveryRound(n: number, round: number): Promise<DeliveryResult> {
  const sim = createEtcdSim();
  const client = sim.etcd3();
  try {
    return await deliveryRound(client, `${PREFIX}inproc/${round}/`, n);
  } finally {
    client.close();
    closeSim(sim);
  }
}

async function etcdDeliveryRound(address: string, n: number, round: number): Promise<DeliveryResult> {
  const client = new Etcd3({ hosts: address });
  const prefix = `${PREFIX}inproc/${round}/`;
  try {
    return await deliveryRound(client, prefix, n);
  } finally {
    await within(client.delete().prefix(prefix).exec().catch(() => undefined), 10_000, undefined);
    client.close();
  }
}

async function inProcessRow(ctx: BenchContext, sz: Sizes, etcdAvailable: boolean): Promise<Row> {
  const name = `in-process etcd3 watch delivery, ${sz.events.toLocaleString('en-US')} events, ${IN_FLIGHT} puts in flight, default mode, no advance()`;
  const etcd = etcdAvailable ? await startRealEtcd() : undefined;
  try {
    const s: number[] = [];
    const b: number[] = [];
    /** Set once an etcdsim round stalls: no further etcdsim rounds (each would wait STALL_MS for nothing). */
    const state: { stalled: { seen: number; of: number } | undefined } = { stalled: undefined };
    const simRound = async (n: number, round: number): Promise<number> => {
      const res = await simDeliveryRound(n, round);
      if (!Number.isFinite(res.nsPerEvent)) {
        state.stalled = { seen: res.seen, of: n };
        ctx.log(`delivery: etcdsim's Watcher stalled at ${res.seen} of ${n} events: no further etcdsim rounds`);
      }
      return res.nsPerEvent;
    };
    // The simulator's rounds first, then etcd's: both sides run etcd3 in this process, and once etcd3's code
    // has also served grpc-js objects it is polymorphic and slower for everyone (interleaved rounds measured
    // the simulator at 9–16 µs/event, alone at 6). A test suite on the simulator runs no gRPC client, so
    // each side is measured as it runs for its users: warmed up by one full round, then timed.
    ctx.log('delivery: in-process etcd3 watch delivery: warm-up, then etcdsim rounds');
    // V8 needs about three such rounds (30k events) to settle on optimized code for etcd3's path and ours.
    for (let w = 1; w <= SIM_WARMUP_ROUNDS && state.stalled === undefined; w++) {
      const warm = await simRound(sz.events, -w);
      if (!Number.isFinite(warm)) s.push(warm);
    }
    for (let r = 0; r < sz.rounds && state.stalled === undefined; r++) s.push(await simRound(sz.events, r));
    if (etcd !== undefined) {
      ctx.log('delivery: in-process row: warm-up, then etcd rounds');
      await etcdDeliveryRound(etcd.address, sz.events, -1);
      for (let r = 0; r < sz.rounds; r++) b.push((await etcdDeliveryRound(etcd.address, sz.events, r)).nsPerEvent);
    }
    ctx.log(`delivery: in-process rounds (µs/event): etcdsim ${s.map((x) => (x / 1000).toFixed(1)).join(' ')}; etcd ${b.map((x) => (x / 1000).toFixed(1)).join(' ')}`);
    const subject = sampleOf(s, sz.events);
    const baseline = etcd === undefined ? subject : sampleOf(b, sz.events);
    const st = state.stalled;
    const stallText = st === undefined ? '' : `etcdsim's Watcher stalled (no event for ${STALL_MS / 1000} s) after ${st.seen} of ${st.of} events; `;
    return {
      name,
      unit: 'event',
      subject,
      baselineName: etcd === undefined ? 'none: no etcd binary' : 'etcd (same etcd3 program, loopback)',
      baseline,
      ratio: subject.nsPerOp / baseline.nsPerOp,
      target: etcd === undefined ? undefined : { maxRatio: 0.02 },
      note:
        `${stallText}time from the first put until the Watcher emitted every 'put'; ` +
        `etcdsim ${perSecond(subject.nsPerOp)}` +
        (etcd === undefined
          ? '; no etcd to compare with (install etcd)'
          : ` vs etcd ${perSecond(baseline.nsPerOp)}` + (Number.isFinite(subject.nsPerOp) ? ` (${(baseline.nsPerOp / subject.nsPerOp).toFixed(1)}× etcd's rate)` : '')),
    };
  } finally {
    await etcd?.stop();
  }
}

// ---------------------------------------------------------------------------------------------------
// Row 2: the gRPC slow consumer. Protos from src/proto's loader (not through src/grpc), so this client is
// the same plain grpc-js program for both servers.

interface MethodCodec {
  requestSerialize(value: unknown): Buffer;
  responseDeserialize(bytes: Buffer): unknown;
}

function method(service: string, name: string): MethodCodec {
  const svc = etcdPackageDefinition()[`etcdserverpb.${service}`] as Record<string, MethodCodec> | undefined;
  const m = svc?.[name];
  if (m === undefined) throw new Error(`no method etcdserverpb.${service}/${name} in the protos`);
  return m;
}

/** What a WatchResponse carries, for counting (protobuf wire format, read only as far as needed). */
interface WatchScan {
  readonly created: boolean;
  readonly canceled: boolean;
  readonly events: number;
  /** mod_revision of the last event's kv (0 without events). */
  readonly lastModRevision: number;
}

class Wire {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }
  varint(): number {
    let result = 0;
    let mul = 1;
    for (;;) {
      if (this.pos >= this.end) throw new Error('truncated varint');
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return result;
      mul *= 128;
    }
  }
  /** Skips one field's value of wire type `wireType`. */
  skip(wireType: number): void {
    if (wireType === 0) this.varint();
    else if (wireType === 1) this.pos += 8;
    else if (wireType === 2) {
      const len = this.varint(); // (not `this.pos += this.varint()`: that reads pos before the length is consumed)
      this.pos += len;
    }
    else if (wireType === 5) this.pos += 4;
    else throw new Error(`unsupported wire type ${wireType}`);
  }
}

/** mod_revision (field 3) of a KeyValue. */
function scanKvModRevision(buf: Buffer, start: number, end: number): number {
  const w = new Wire(buf, start, end);
  let rev = 0;
  while (w.pos < end) {
    const tag = w.varint();
    if (tag >>> 3 === 3 && (tag & 7) === 0) rev = w.varint();
    else w.skip(tag & 7);
  }
  return rev;
}

/** kv (field 2) of an Event → its mod_revision. */
function scanEventModRevision(buf: Buffer, start: number, end: number): number {
  const w = new Wire(buf, start, end);
  let rev = 0;
  while (w.pos < end) {
    const tag = w.varint();
    if (tag >>> 3 === 2 && (tag & 7) === 2) {
      const len = w.varint();
      rev = scanKvModRevision(buf, w.pos, w.pos + len);
      w.pos += len;
    } else w.skip(tag & 7);
  }
  return rev;
}

function scanWatchResponse(buf: Buffer): WatchScan {
  const w = new Wire(buf, 0, buf.length);
  let created = false;
  let canceled = false;
  let events = 0;
  let lastEvent: [number, number] | undefined;
  while (w.pos < buf.length) {
    const tag = w.varint();
    const field = tag >>> 3;
    const type = tag & 7;
    if (field === 3 && type === 0) created = w.varint() !== 0;
    else if (field === 4 && type === 0) canceled = w.varint() !== 0;
    else if (field === 11 && type === 2) {
      const len = w.varint();
      events++;
      lastEvent = [w.pos, w.pos + len];
      w.pos += len;
    } else w.skip(type);
  }
  return { created, canceled, events, lastModRevision: lastEvent === undefined ? 0 : scanEventModRevision(buf, lastEvent[0], lastEvent[1]) };
}

const WATCH_PATH = '/etcdserverpb.Watch/Watch';
const PUT_PATH = '/etcdserverpb.KV/Put';

/** A connection of its own (grpc-js otherwise shares one subchannel between clients of the same target). */
function connection(address: string): grpc.Client {
  return new grpc.Client(address, grpc.credentials.createInsecure(), {
    'grpc.use_local_subchannel_pool': 1,
    'grpc.max_receive_message_length': -1,
  });
}

/** One Watch stream with one prefix watcher on it, counting what it receives. */
interface WatchStreamState {
  readonly call: grpc.ClientDuplexStream<unknown, WatchScan>;
  /** Resolves at the watcher's `created` response. */
  readonly created: Promise<void>;
  events: number;
  /** Responses that carried at least one event. */
  responses: number;
  lastRev: number;
  /** When this stream first held the target revision (performance.now() ms). */
  reachedAt: number | undefined;
  canceled: boolean;
  error: string | undefined;
  createdSeen: boolean;
}

/**
 * Opens a Watch stream on `conn` and creates a prefix watcher on it. Every response is scanned and counted
 * (never kept); `target()` is the revision whose arrival sets `reachedAt`. With `pauseAfterCreated` the
 * stream is paused in its `created` response's handler: grpc-js then stops reading the HTTP/2 stream, so
 * the server meets a client that does not read (until the caller resumes it).
 */
function openWatch(conn: grpc.Client, prefix: string, pauseAfterCreated: boolean, target: () => number | undefined, onProgress: () => void): WatchStreamState {
  const watchCodec = method('Watch', 'Watch');
  const call = conn.makeBidiStreamRequest<unknown, WatchScan>(WATCH_PATH, (v) => watchCodec.requestSerialize(v), scanWatchResponse);
  let created!: () => void;
  const s: WatchStreamState = {
    call,
    created: new Promise<void>((r) => (created = r)),
    events: 0,
    responses: 0,
    lastRev: 0,
    reachedAt: undefined,
    canceled: false,
    error: undefined,
    createdSeen: false,
  };
  call.on('error', (e: grpc.ServiceError) => {
    if (e.code !== grpc.status.CANCELLED) s.error ??= e.message;
    onProgress();
  });
  call.on('data', (r: WatchScan) => {
    if (r.created) {
      s.createdSeen = true;
      if (pauseAfterCreated) call.pause();
      created();
    }
    if (r.canceled) s.canceled = true;
    if (r.events > 0) {
      s.events += r.events;
      s.responses++;
      s.lastRev = r.lastModRevision;
      const t = target();
      if (s.reachedAt === undefined && t !== undefined && s.lastRev >= t) s.reachedAt = now();
    }
    onProgress();
  });
  const end = Buffer.from(prefix);
  end[end.length - 1]!++;
  call.write({ create_request: { key: Buffer.from(prefix), range_end: end } });
  return s;
}

interface SlowResult {
  /** Bytes: VmRSS of the fresh server before the load (its footprint at rest). */
  readonly readyRss: number;
  /** Bytes: VmHWM after the drain. */
  readonly peakRss: number;
  /** Bytes: the largest VmRSS sampled during the run. */
  readonly sampledMaxRss: number;
  /** ms from the last put's response until every reader had the last event; Infinity if some never did. */
  readonly drainMs: number;
  /** Per reader: responses carrying events, and events received. */
  readonly responsesPerReader: readonly number[];
  readonly eventsPerReader: readonly number[];
  readonly puts: number;
  readonly incompleteReaders: number;
  readonly putsSeconds: number;
  /** The never-reading watcher once resumed: events, responses, ms until it had the last event (or undefined). */
  readonly slow: { events: number; responses: number; ms: number | undefined; canceled: boolean; error: string | undefined };
  /** Set when the round could not finish (e.g. the server died): its figures are then ∞. */
  readonly failure?: string | undefined;
}

async function slowConsumerRound(server: ServerProc, puts: number, round: number, log: (m: string) => void): Promise<SlowResult> {
  const prefix = `${PREFIX}slow/${round}/`;
  const putConn = connection(server.address);
  const readerConns = Array.from({ length: READER_CONNS }, () => connection(server.address));
  const slowConn = connection(server.address);
  const streams: WatchStreamState[] = [];
  let sampler: NodeJS.Timeout | undefined;
  const readyRss = memoryOf(server.pid).rss;
  try {
    let target: number | undefined;
    let progress = 0;
    let poke = (): void => {};
    const onProgress = (): void => {
      progress++;
      poke();
    };
    const readers: WatchStreamState[] = [];
    for (let i = 0; i < READERS; i++) readers.push(openWatch(readerConns[i % READER_CONNS]!, prefix, false, () => target, onProgress));
    // The never-reading watcher: paused at `created`, nothing reads it until the measurement is over.
    const slow = openWatch(slowConn, prefix, true, () => target, onProgress);
    streams.push(...readers, slow);
    const allCreated = await within(Promise.all(streams.map((s) => s.created)).then(() => true), 30_000, false);
    if (!allCreated) {
      const why = streams.find((x) => x.error !== undefined)?.error;
      throw new Error(`${server.name}: ${streams.filter((x) => !x.createdSeen).length} of ${streams.length} watchers not created within 30 s${why === undefined ? '' : ` (${why})`}`);
    }

    let sampledMax = 0;
    sampler = setInterval(() => {
      const m = memoryOf(server.pid);
      if (m.rss > sampledMax) sampledMax = m.rss;
    }, 100);

    const rnd = new FastRandom(1, `delivery-slow-${round}`);
    const value = Buffer.alloc(VALUE_BYTES);
    rnd.fill(value);
    const putCodec = method('KV', 'Put');
    let maxRev = 0;
    const put = (i: number): Promise<void> =>
      new Promise((resolve, reject) => {
        putConn.makeUnaryRequest<unknown, { header?: { revision?: string } }>(
          PUT_PATH,
          (v) => putCodec.requestSerialize(v),
          (b) => putCodec.responseDeserialize(b) as { header?: { revision?: string } },
          { key: Buffer.from(key(prefix, i)), value },
          { deadline: Date.now() + PUT_DEADLINE_MS },
          (err, res) => {
            if (err !== null) return reject(err);
            maxRev = Math.max(maxRev, Number(res?.header?.revision ?? 0));
            resolve();
          },
        );
      });
    log(`delivery: ${server.name}: ${READERS} readers + 1 never reading, ${puts} puts of ${VALUE_BYTES} B, ${SLOW_IN_FLIGHT} in flight`);
    const p0 = now();
    await pool(puts, SLOW_IN_FLIGHT, put);
    const lastPutAt = now();
    target = maxRev;
    // a reader that had the last event before the last put's response drained in 0
    for (const r of readers) if (r.reachedAt === undefined && r.lastRev >= target) r.reachedAt = lastPutAt;
    const wait = progressWait(
      () => readers.every((r) => r.reachedAt !== undefined || r.canceled || r.error !== undefined),
      () => progress,
      STALL_MS,
    );
    poke = wait.poke;
    poke();
    const drained = await wait.finished;
    poke = () => {};
    const incomplete = readers.filter((r) => r.reachedAt === undefined).length;
    const drainMs = drained && incomplete === 0 ? Math.max(0, ...readers.map((r) => r.reachedAt! - lastPutAt)) : Number.POSITIVE_INFINITY;
    const mem = memoryOf(server.pid);
    clearInterval(sampler);
    sampler = undefined;
    sampledMax = Math.max(sampledMax, mem.rss);
    log(
      `delivery: ${server.name}: drain ${Number.isFinite(drainMs) ? `${drainMs.toFixed(0)} ms` : `incomplete (${incomplete} readers short)`}, ` +
        `peak RSS ${formatBytes(mem.hwm)}, responses/reader ${median(readers.map((r) => r.responses))}`,
    );

    // Only now: resume the never-reading watcher and see how it catches up.
    const s0 = now();
    const slowWait = progressWait(
      () => slow.lastRev >= maxRev || slow.canceled || slow.error !== undefined,
      () => slow.events,
      Math.min(STALL_MS, CATCH_UP_MS),
    );
    poke = slowWait.poke;
    slow.call.resume();
    const caughtUp = await within(slowWait.finished, CATCH_UP_MS, false);
    slowWait.cancel();
    const slowMs = caughtUp && slow.lastRev >= maxRev ? now() - s0 : undefined;

    return {
      readyRss,
      peakRss: mem.hwm,
      sampledMaxRss: sampledMax,
      drainMs,
      responsesPerReader: readers.map((r) => r.responses),
      eventsPerReader: readers.map((r) => r.events),
      puts,
      incompleteReaders: incomplete,
      putsSeconds: (lastPutAt - p0) / 1000,
      slow: { events: slow.events, responses: slow.responses, ms: slowMs, canceled: slow.canceled, error: slow.error },
    };
  } finally {
    if (sampler !== undefined) clearInterval(sampler);
    for (const s of streams) s.call.cancel();
    putConn.close();
    for (const c of readerConns) c.close();
    slowConn.close();
  }
}

interface SideResults {
  readonly name: string;
  readonly rounds: SlowResult[];
}

/** One round on a fresh server process; a round that fails (a put or stream error, a dead server) is reported, not thrown. */
async function slowSide(start: () => Promise<ServerProc>, puts: number, round: number, log: (m: string) => void): Promise<SlowResult> {
  const server = await start();
  try {
    return await slowConsumerRound(server, puts, round, log);
  } catch (e) {
    const failure = e instanceof Error ? e.message : String(e);
    log(`delivery: ${server.name}: round failed: ${failure}`);
    const inf = Number.POSITIVE_INFINITY;
    return {
      readyRss: Number.NaN,
      peakRss: inf,
      sampledMaxRss: inf,
      drainMs: inf,
      responsesPerReader: [],
      eventsPerReader: [],
      puts,
      incompleteReaders: READERS,
      putsSeconds: Number.NaN,
      slow: { events: 0, responses: 0, ms: undefined, canceled: false, error: undefined },
      failure,
    };
  } finally {
    await server.stop();
  }
}

function describeSide(side: SideResults): string {
  const failed = side.rounds.filter((r) => r.failure !== undefined);
  const rs = side.rounds.filter((r) => r.failure === undefined);
  const failText = failed.length === 0 ? '' : `; ${failed.length} round(s) failed: ${failed[0]!.failure}`;
  if (rs.length === 0) return `${side.name}: no round finished${failText}`;
  const resp = rs.flatMap((r) => r.responsesPerReader);
  const min = Math.min(...resp);
  const max = Math.max(...resp);
  const last = rs[rs.length - 1]!;
  const slow = last.slow;
  const slowText =
    slow.error !== undefined
      ? `its stream failed (${slow.error})`
      : slow.canceled
        ? `canceled by the server after ${slow.events.toLocaleString('en-US')} events`
        : slow.ms === undefined
          ? `${slow.events.toLocaleString('en-US')} events in ${slow.responses.toLocaleString('en-US')} responses, not caught up within ${CATCH_UP_MS / 1000} s`
          : `caught up: ${slow.events.toLocaleString('en-US')} events in ${slow.responses.toLocaleString('en-US')} responses, ${formatNs(slow.ms * 1e6)}`;
  const incomplete = rs.reduce((a, r) => a + r.incompleteReaders, 0);
  const wrongCounts = rs.reduce((a, r) => a + r.eventsPerReader.filter((n) => n !== r.puts).length, 0);
  return (
    `${side.name}: ${median(resp).toLocaleString('en-US')} responses/reader carried the events (min ${min}, max ${max})` +
    (incomplete > 0 ? `, ${incomplete} reader(s) never got the last event (stalled ${STALL_MS / 1000} s, or their stream ended)` : '') +
    (wrongCounts > 0 ? `, ${wrongCounts} reader(s) received other than one event per put` : '') +
    `, sampled VmRSS max ${formatBytes(median(rs.map((r) => r.sampledMaxRss)))}, puts ${median(rs.map((r) => r.putsSeconds)).toFixed(1)} s; ` +
    `never-reading watcher resumed after the run: ${slowText}${failText}`
  );
}

async function slowConsumerRows(ctx: BenchContext, sz: Sizes, etcdAvailable: boolean): Promise<Row[]> {
  const sim: SideResults = { name: 'etcdsim', rounds: [] };
  const etcd: SideResults = { name: 'etcd', rounds: [] };
  for (let r = 0; r < sz.slowRounds; r++) {
    for (const side of r % 2 === 0 ? ['b', 's'] : ['s', 'b']) {
      if (side === 'b' && etcdAvailable) {
        ctx.log(`delivery: gRPC slow consumer, round ${r + 1}/${sz.slowRounds}: etcd`);
        etcd.rounds.push(await slowSide(startRealEtcd, sz.slowPuts, r, ctx.log));
      } else if (side === 's') {
        ctx.log(`delivery: gRPC slow consumer, round ${r + 1}/${sz.slowRounds}: etcdsim serve`);
        sim.rounds.push(await slowSide(startSimServe, sz.slowPuts, r, ctx.log));
      }
    }
  }
  const hasBaseline = etcd.rounds.length > 0;
  const base = hasBaseline ? etcd : sim;
  const shape = `${READERS} readers + 1 never reading, ${sz.slowPuts.toLocaleString('en-US')} puts of ${VALUE_BYTES} B, ${SLOW_IN_FLIGHT} in flight`;
  const baselineName = hasBaseline ? 'etcd (local binary, loopback)' : 'none: no etcd binary';
  const runner = simRunsDist() ? 'etcdsim ran dist/' : 'etcdsim ran src/ through tsx (dist/ older than src/: its compiler is in the RSS)';
  const readyRss = (side: SideResults): number => median(side.rounds.filter((r) => r.failure === undefined).map((r) => r.readyRss));
  const rss = (side: SideResults): Sample => sampleOf(side.rounds.map((r) => r.peakRss));
  const drain = (side: SideResults): Sample => sampleOf(side.rounds.map((r) => r.drainMs * 1e6));
  const rssRow: Row = {
    name: `over gRPC, slow consumer (${shape}): server peak RSS`,
    unit: 'server',
    measure: 'bytes',
    subject: rss(sim),
    baselineName,
    baseline: rss(base),
    ratio: rss(sim).nsPerOp / rss(base).nsPerOp,
    target: hasBaseline ? { maxRatio: 1 } : undefined,
    note:
      `VmHWM of the server process (a fresh one per round), read after the readers drained; RSS at rest (ready, before the load): ` +
      `etcdsim ${formatBytes(readyRss(sim))}` +
      (hasBaseline ? `, etcd ${formatBytes(readyRss(etcd))}` : '') +
      `; ${runner}`,
  };
  const drainRow: Row = {
    name: `over gRPC, slow consumer (${shape}): reader drain time`,
    unit: 'drain',
    subject: drain(sim),
    baselineName,
    baseline: drain(base),
    ratio: drain(sim).nsPerOp / drain(base).nsPerOp,
    target: hasBaseline ? { maxRatio: 1 } : undefined,
    note:
      'from the last put\'s response until every reader had the last event; ' +
      describeSide(sim) +
      (hasBaseline ? ' | ' + describeSide(etcd) : '; no etcd to compare with (install etcd)'),
  };
  return [rssRow, drainRow];
}

export const deliverySection: BenchSection = {
  name: 'delivery',
  title: 'watch delivery as clients see it: in-process etcd3 (default mode) and a gRPC slow consumer, vs a real etcd',
  async run(ctx: BenchContext): Promise<Row[]> {
    const sz = ctx.quick ? QUICK : FULL;
    const etcdAvailable = hasEtcdBinary();
    if (!etcdAvailable) ctx.log('delivery: no etcd binary on PATH: etcdsim alone, no baselines');
    const unguard = guardSignals();
    try {
      const rows: Row[] = [];
      rows.push(await inProcessRow(ctx, sz, etcdAvailable));
      rows.push(...(await slowConsumerRows(ctx, sz, etcdAvailable)));
      return rows;
    } finally {
      killLive();
      unguard();
    }
  },
};
