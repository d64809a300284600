/**
 * The client-level differential (issue 13, item 3): one *client program* — an async function written for a
 * real etcd, talking only through npm etcd3's public API (or, for the gRPC cases, a plain gRPC address) —
 * runs unchanged against a fresh real etcd 3.4.23 and against the simulator in its default mode; what it
 * observed must be equal, up to what etcd itself leaves free (see `normalise`).
 *
 * Each program gets a fresh etcd and a fresh simulator, so revisions are compared exactly (both start at 1).
 * The two sides run one after the other, never at the same time, so neither steals the other's CPU.
 *
 * A program records what it sees with `t.observe(step, value)`, step by step. When it throws on one side
 * (a wait that hit its deadline, an error etcd did not give), the steps recorded so far are still compared,
 * so the report names the first step where the simulator went another way — not just "timed out".
 *
 * The real etcd runs with --heartbeat-interval 100 --election-timeout 1000: etcd's minimum lease TTL is
 * then ceil(floor(3 × 10 / 2) × 100 ms) = 2 s (CLIENT_MIN_LEASE_TTL), the same as the simulator's default,
 * so a lease of a few seconds expires in a few seconds on both sides. (The request-level differential in
 * test/diff uses a 10 s election timeout, i.e. a 15 s minimum TTL; that would make the lease programs here
 * wait 15 s per expiry.)
 *
 * Environment:
 *   ETCDSIM_SEED          seed of the random programs (default DEFAULT_CLIENT_SEED); printed on failure
 *   ETCDSIM_CLIENT_OPS    operations of the random workload (default 400)
 *   ETCDSIM_CLIENTS_SIM   which simulator the "sim" side is: `inproc` (default: createEtcdSim() + sim.etcd3()),
 *                         `serve` (serve({ port: 0 }) on its real clock, a plain Etcd3 over loopback gRPC), or
 *                         `etcd` (a second fresh real etcd: the self-test that a program's observation
 *                         does not depend on timing), or `virtual` (createEtcdSim({ time: 'virtual' }) with
 *                         nobody advancing its clock: the negative control — unchanged etcd client programs
 *                         are expected to diverge there, and the report shows where)
 *   ETCDSIM_CLIENTS_DUMP  a directory: each run's normalised steps are written there as <name>.<side>.json
 *   CI=true               a missing etcd binary fails instead of skipping
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Etcd3, type Watcher } from 'etcd3';
import { startEtcd, type EtcdProcess } from '../../src/diff/etcd_process.js';
import { minLeaseTTLFor } from '../../src/lease/index.js';
import { createEtcdSim, type EtcdSim } from '../../src/index.js';
import { serve, type ServeHandle } from '../../src/grpc/server.js';
import { VirtualClock } from '../../src/sim/index.js';

export { skipWithoutEtcd, inCI } from '../diff/helpers.js';

export const CLIENT_ETCD_HEARTBEAT_MS = 100;
export const CLIENT_ETCD_ELECTION_MS = 1000;
/** etcd's minimum lease TTL with those flags (and the simulator's default): 2 s. */
export const CLIENT_MIN_LEASE_TTL = minLeaseTTLFor(CLIENT_ETCD_HEARTBEAT_MS, CLIENT_ETCD_ELECTION_MS / CLIENT_ETCD_HEARTBEAT_MS);

/** The seed CI runs (ETCDSIM_SEED overrides it; `npm run test:clients:long` draws a new one). */
export const DEFAULT_CLIENT_SEED = 20261130;

export function clientSeed(): number {
  const s = process.env['ETCDSIM_SEED'];
  if (s === undefined || s === '') return DEFAULT_CLIENT_SEED;
  const n = Number(s);
  if (!Number.isSafeInteger(n)) throw new RangeError(`ETCDSIM_SEED must be an integer, got ${s}`);
  return n;
}

export function clientOps(defaultOps: number): number {
  const v = process.env['ETCDSIM_CLIENT_OPS'];
  if (v === undefined || v === '') return defaultOps;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n <= 0) throw new RangeError(`ETCDSIM_CLIENT_OPS must be a positive integer, got ${v}`);
  return n;
}

export type SideKind = 'etcd' | 'sim';
type SimFlavour = 'inproc' | 'virtual' | 'serve' | 'etcd';

function simFlavour(): SimFlavour {
  const v = process.env['ETCDSIM_CLIENTS_SIM'];
  if (v === undefined || v === '' || v === 'inproc') return 'inproc';
  if (v === 'serve' || v === 'etcd' || v === 'virtual') return v;
  throw new Error(`ETCDSIM_CLIENTS_SIM must be inproc, virtual, serve or etcd, got ${v}`);
}

/** What a program gets on each side. */
export interface ProgramContext {
  /** Which side this run is (for messages only: a program must not branch on it). */
  readonly side: SideKind;
  /** The program's etcd3 client. */
  readonly client: Etcd3;
  /** Another etcd3 client on the same etcd (its own connection on a real etcd); closed by the harness. */
  connect(): Etcd3;
  /** Records one step of what the program observed. Steps are compared in order. */
  observe(step: string, value: unknown): void;
  /** Wakes every `until` so it re-checks its condition; call it from event handlers. */
  changed(): void;
  /** Resolves once `cond()` holds (checked now and on each `changed()`); rejects after `ms` with `what` and `detail()`. */
  until(cond: () => boolean, what: string, ms: number, detail?: () => string): Promise<void>;
  /** Seed of this run (both sides get the same). */
  readonly seed: number;
}

export type ClientProgram = (t: ProgramContext) => Promise<void>;

/** What a gRPC-level program gets: an address speaking etcd's v3 gRPC API. */
export interface GrpcProgramContext extends Omit<ProgramContext, 'client' | 'connect'> {
  /** host:port of the server. */
  readonly address: string;
  /** Timing, batching and the like: printed after the run, never compared. */
  note(line: string): void;
}

export type GrpcProgram = (t: GrpcProgramContext) => Promise<void>;

export interface SideResult {
  readonly steps: [string, unknown][];
  readonly error: Error | undefined;
  readonly notes: string[];
}

// ----------------------------------------------------------------------------------------------------
// Waiting: on conditions, with deadlines (never a sleep standing in for "it has probably happened").

class Conditions {
  private readonly waiters = new Set<() => void>();
  changed(): void {
    for (const w of [...this.waiters]) w();
  }
  until(cond: () => boolean, what: string, ms: number, detail?: () => string): Promise<void> {
    if (cond()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const check = (): void => {
        let ok: boolean;
        try {
          ok = cond();
        } catch (err) {
          done();
          reject(err as Error);
          return;
        }
        if (ok) {
          done();
          resolve();
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${ms} ms waiting for ${what}${detail === undefined ? '' : `: ${detail()}`}`));
      }, ms);
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
    });
  }
}

// ----------------------------------------------------------------------------------------------------
// Sides.

interface Side {
  readonly kind: SideKind;
  readonly label: string;
  readonly address: string | undefined;
  client(): Etcd3;
  close(): Promise<void>;
  readonly minLeaseTTL: number;
}

async function etcdSide(kind: SideKind, label: string): Promise<Side> {
  const proc: EtcdProcess = await startEtcd({ heartbeatMs: CLIENT_ETCD_HEARTBEAT_MS, electionMs: CLIENT_ETCD_ELECTION_MS });
  const clients: Etcd3[] = [];
  return {
    kind,
    label,
    address: proc.address,
    minLeaseTTL: CLIENT_MIN_LEASE_TTL,
    client: () => {
      const c = new Etcd3({ hosts: proc.address });
      clients.push(c);
      return c;
    },
    close: async () => {
      closeClients(clients);
      await proc.stop();
    },
  };
}

/**
 * Closes etcd3 clients. A watcher still attached when its client closes makes etcd3 re-establish the watch
 * stream forever (a timer that keeps the process alive), so watchers a program could not cancel — it
 * failed, or the server never answered the cancel — are dropped from etcd3's watch manager first.
 */
function closeClients(clients: readonly Etcd3[]): void {
  for (const c of clients) {
    const manager = (c as unknown as { watchManager?: { watchers?: unknown[] } }).watchManager;
    if (manager !== undefined && Array.isArray(manager.watchers)) manager.watchers = [];
    c.close();
  }
}

function closeSim(sim: EtcdSim): void {
  const s = sim as EtcdSim & { close?: () => void };
  if (typeof s.close === 'function') s.close();
  else sim.server.close();
}

async function simSide(): Promise<Side> {
  const flavour = simFlavour();
  if (flavour === 'etcd') return etcdSide('sim', 'second real etcd (ETCDSIM_CLIENTS_SIM=etcd)');
  if (flavour === 'serve') {
    const handle: ServeHandle = await serve({ port: 0 });
    const clients: Etcd3[] = [];
    return {
      kind: 'sim',
      label: 'simulator over gRPC (serve({ port: 0 }), real clock)',
      address: handle.address,
      minLeaseTTL: handle.server.lessor.minLeaseTTL,
      client: () => {
        const c = new Etcd3({ hosts: handle.address });
        clients.push(c);
        return c;
      },
      close: async () => {
        closeClients(clients);
        await handle.close();
      },
    };
  }
  const sim = flavour === 'virtual' ? (createEtcdSim as (o: object) => EtcdSim)({ time: 'virtual' }) : createEtcdSim();
  const clients: Etcd3[] = [];
  return {
    kind: 'sim',
    label: flavour === 'virtual' ? "simulator in-process on a virtual clock nobody advances (createEtcdSim({ time: 'virtual' }))" : 'simulator in-process (createEtcdSim() defaults, sim.etcd3())',
    address: undefined,
    minLeaseTTL: sim.lessor.minLeaseTTL,
    client: () => {
      const c = sim.etcd3();
      clients.push(c);
      return c;
    },
    close: async () => {
      closeClients(clients);
      closeSim(sim);
    },
  };
}

/** The simulator side for gRPC programs: `serve({ port: 0 })` on its default (real) clock. */
async function grpcSimSide(): Promise<{ address: string; label: string; close(): Promise<void>; handle?: ServeHandle }> {
  const flavour = simFlavour();
  if (flavour === 'virtual') {
    const handle = await serve({ port: 0, clock: new VirtualClock() });
    return { address: handle.address, label: 'simulator over gRPC on a virtual clock nobody advances', close: () => handle.close(), handle };
  }
  if (flavour === 'etcd') {
    const s = await etcdSide('sim', 'second real etcd (ETCDSIM_CLIENTS_SIM=etcd)');
    return { address: s.address ?? '', label: s.label, close: () => s.close() };
  }
  const handle = await serve({ port: 0 });
  return { address: handle.address, label: 'simulator over gRPC (serve({ port: 0 }), real clock)', close: () => handle.close(), handle };
}

async function runSide(side: Side, program: ClientProgram, seed: number): Promise<SideResult> {
  const steps: [string, unknown][] = [];
  const conds = new Conditions();
  const main = side.client();
  let error: Error | undefined;
  try {
    await program({
      side: side.kind,
      client: main,
      connect: () => side.client(),
      observe: (step, value) => steps.push([step, normaliseForStorage(value)]),
      changed: () => conds.changed(),
      until: (cond, what, ms, detail) => conds.until(cond, what, ms, detail),
      seed,
    });
  } catch (err) {
    error = err instanceof Error ? err : new Error(String(err));
  } finally {
    await side.close();
  }
  return { steps, error, notes: [] };
}

// ----------------------------------------------------------------------------------------------------
// Normalisation: only what etcd leaves free.

/** Header fields that name the cluster, the member and the raft term: free (cluster identity, elections). */
const FREE_HEADER_FIELDS = new Set(['cluster_id', 'member_id', 'raft_term']);
/** Fields holding a lease ID the server chose. */
const LEASE_FIELDS = new Set(['lease', 'leaseId', 'ID']);

/** A JSON-able deep copy taken when a step is recorded (Buffers as text, bigints as decimal strings). */
function normaliseForStorage(v: unknown): unknown {
  if (v === undefined) return null;
  if (v === null || typeof v === 'boolean' || typeof v === 'number' || typeof v === 'string') return v;
  if (typeof v === 'bigint') return String(v);
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return Buffer.from(v).toString('latin1');
  if (Array.isArray(v)) return v.map(normaliseForStorage);
  if (v instanceof Error) return { error: v.name, message: v.message };
  if (typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v as object).sort()) out[k] = normaliseForStorage((v as Record<string, unknown>)[k]);
    return out;
  }
  return String(v);
}

/**
 * Renames server-chosen lease IDs L1, L2, ... in order of first appearance (a deterministic walk of the
 * steps: a program records each grant before it uses the lease), and masks cluster/member IDs and the raft
 * term. '0' (no lease) stays. Nothing else is touched: revisions, versions, values, errors are compared as
 * they are.
 */
export function normalise(steps: [string, unknown][]): [string, unknown][] {
  const names = new Map<string, string>();
  const walk = (v: unknown, key: string): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x, key));
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
        if (FREE_HEADER_FIELDS.has(k) && x !== '0' && x !== 0) out[k] = '*';
        else out[k] = walk(x, k);
      }
      return out;
    }
    if (LEASE_FIELDS.has(key) && typeof v === 'string' && v !== '0' && /^-?\d+$/.test(v)) {
      let n = names.get(v);
      if (n === undefined) {
        n = `L${names.size + 1}`;
        names.set(v, n);
      }
      return n;
    }
    return v;
  };
  return steps.map(([s, v]) => [s, walk(v, '')]);
}

// ----------------------------------------------------------------------------------------------------
// Readable comparison.

const show = (v: unknown, max = 600): string => {
  const s = v === undefined ? '(absent)' : JSON.stringify(v);
  return s.length > max ? `${s.slice(0, max)}… (${s.length} chars)` : s;
};

/** Path and both values at the first place two JSON values differ (depth first, arrays index by index). */
export function firstDivergence(a: unknown, b: unknown, path = ''): { path: string; a: unknown; b: unknown; context: string } | undefined {
  if (Object.is(a, b)) return undefined;
  if (Array.isArray(a) && Array.isArray(b)) {
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) {
      const d = firstDivergence(a[i], b[i], `${path}[${i}]`);
      if (d !== undefined) {
        const before = i > 0 ? `\n    (element before, equal on both sides: ${show(a[i - 1], 300)})` : '';
        return { ...d, context: d.context + before };
      }
    }
    if (a.length !== b.length) {
      return {
        path: `${path}.length`,
        a: a.length,
        b: b.length,
        context: `\n    first extra element: ${show(a.length > b.length ? a[n] : b[n], 300)} (on the ${a.length > b.length ? 'etcd' : 'simulator'} side)` +
          (n > 0 ? `\n    last common element: ${show(a[n - 1], 300)}` : ''),
      };
    }
    return undefined;
  }
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    for (const k of keys) {
      const d = firstDivergence((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  return { path, a, b, context: '' };
}

/** Compares two runs step by step; throws an AssertionError naming the first divergence. */
export function compareRuns(name: string, etcd: SideResult, sim: SideResult, simLabel: string, replay: string): void {
  const a = normalise(etcd.steps);
  const b = normalise(sim.steps);
  const dump = process.env['ETCDSIM_CLIENTS_DUMP'];
  if (dump !== undefined && dump !== '') {
    mkdirSync(dump, { recursive: true });
    const base = join(dump, name.replace(/[^A-Za-z0-9_-]+/g, '_'));
    writeFileSync(`${base}.etcd.json`, JSON.stringify({ error: etcd.error?.message, steps: a }, null, 1));
    writeFileSync(`${base}.sim.json`, JSON.stringify({ error: sim.error?.message, steps: b }, null, 1));
  }
  if (etcd.error !== undefined) {
    // The program failed against the real etcd: a bug in the program (or a surprise from etcd), not a divergence.
    throw new assert.AssertionError({
      message:
        `${name}: the program failed against the real etcd (${etcd.steps.length} steps recorded): ${etcd.error.stack ?? etcd.error.message}\n` +
        `last step: ${show(a[a.length - 1], 1000)}\nreplay: ${replay}`,
    });
  }
  const header = `${name}: the ${simLabel} diverged from etcd 3.4.23\nreplay: ${replay}\n`;
  const stepNames = (xs: [string, unknown][]): string[] => xs.map(([s]) => s);
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const [sa, va] = a[i]!;
    const [sb, vb] = b[i]!;
    if (sa !== sb) {
      throw new assert.AssertionError({
        message:
          `${header}step ${i}: etcd recorded "${sa}", the simulator "${sb}"\n  etcd:      ${show(va)}\n  simulator: ${show(vb)}` +
          (sim.error === undefined ? '' : `\nthe simulator side had failed before that step: ${sim.error.message}`),
      });
    }
    const d = firstDivergence(va, vb);
    if (d !== undefined) {
      throw new assert.AssertionError({
        message:
          `${header}first divergence at step ${i} "${sa}", at ${d.path || '(the value)'}\n` +
          `  etcd:      ${show(d.a)}\n  simulator: ${show(d.b)}${d.context}` +
          (sim.error === undefined ? '' : `\nthe simulator side then failed: ${sim.error.message}`),
      });
    }
  }
  if (sim.error !== undefined) {
    throw new assert.AssertionError({
      message:
        `${header}the simulator side failed after ${b.length} equal steps (etcd recorded ${a.length}): ${sim.error.message}\n` +
        `  next step on etcd: ${a.length > b.length ? `"${a[b.length]![0]}" ${show(a[b.length]![1])}` : '(none)'}\n` +
        `  simulator's last step: ${b.length > 0 ? `"${b[b.length - 1]![0]}" ${show(b[b.length - 1]![1])}` : '(none)'}`,
    });
  }
  if (a.length !== b.length) {
    throw new assert.AssertionError({
      message: `${header}etcd recorded ${a.length} steps, the simulator ${b.length}: ${show(stepNames(a))} vs ${show(stepNames(b))}`,
    });
  }
}

function replayCommand(file: string, name: string, extraEnv: Record<string, string | number>): string {
  const env = Object.entries(extraEnv)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  return `${env}${env === '' ? '' : ' '}node --import tsx --test --test-name-pattern=${JSON.stringify(name)} ${file}`;
}

export interface DifferentialOptions {
  /** The test file (for the replay command). */
  readonly file: string;
  /** Environment that reproduces this run (seed, ops), printed with any failure. */
  readonly env?: Record<string, string | number>;
}

/** Runs `program` against a fresh real etcd, then against a fresh simulator, and compares what it observed. */
export async function differential(name: string, program: ClientProgram, opts: DifferentialOptions): Promise<{ etcd: SideResult; sim: SideResult }> {
  const seed = clientSeed();
  const replay = replayCommand(opts.file, name, opts.env ?? {});
  const t0 = performance.now();
  const etcd = await runSide(await etcdSide('etcd', 'real etcd'), program, seed);
  const t1 = performance.now();
  const simS = await simSide();
  if (simS.minLeaseTTL !== CLIENT_MIN_LEASE_TTL) {
    throw new Error(`the simulator's minimum lease TTL is ${simS.minLeaseTTL} s, the real etcd's ${CLIENT_MIN_LEASE_TTL} s: lease programs would not compare`);
  }
  const sim = await runSide(simS, program, seed);
  const t2 = performance.now();
  console.log(`[${name}] real etcd: ${etcd.steps.length} steps, ${Math.round(t1 - t0)} ms (with etcd's start); ${simS.label}: ${sim.steps.length} steps, ${Math.round(t2 - t1)} ms`);
  compareRuns(name, etcd, sim, simS.label, replay);
  return { etcd, sim };
}

/** Like `differential`, for programs that speak gRPC to an address: a real etcd, then `serve({ port: 0 })`. */
export async function grpcDifferential(name: string, program: GrpcProgram, opts: DifferentialOptions): Promise<{ etcd: SideResult; sim: SideResult }> {
  const seed = clientSeed();
  const replay = replayCommand(opts.file, name, opts.env ?? {});
  const run = async (side: SideKind, address: string, close: () => Promise<void>): Promise<SideResult> => {
    const steps: [string, unknown][] = [];
    const notes: string[] = [];
    const conds = new Conditions();
    let error: Error | undefined;
    try {
      await program({
        side,
        address,
        observe: (step, value) => steps.push([step, normaliseForStorage(value)]),
        changed: () => conds.changed(),
        until: (cond, what, ms, detail) => conds.until(cond, what, ms, detail),
        note: (line) => notes.push(line),
        seed,
      });
    } catch (err) {
      error = err instanceof Error ? err : new Error(String(err));
    } finally {
      await close();
    }
    return { steps, error, notes };
  };
  const t0 = performance.now();
  const proc = await startEtcd({ heartbeatMs: CLIENT_ETCD_HEARTBEAT_MS, electionMs: CLIENT_ETCD_ELECTION_MS });
  const etcd = await run('etcd', proc.address, () => proc.stop());
  const t1 = performance.now();
  const s = await grpcSimSide();
  const sim = await run('sim', s.address, () => s.close());
  const t2 = performance.now();
  console.log(`[${name}] real etcd: ${etcd.steps.length} steps, ${Math.round(t1 - t0)} ms (with etcd's start); ${s.label}: ${sim.steps.length} steps, ${Math.round(t2 - t1)} ms`);
  for (const n of etcd.notes) console.log(`[${name}] etcd: ${n}`);
  for (const n of sim.notes) console.log(`[${name}] ${s.label}: ${n}`);
  compareRuns(name, etcd, sim, s.label, replay);
  return { etcd, sim };
}

// ----------------------------------------------------------------------------------------------------
// Small shared pieces of programs.

/** mulberry32: a tiny seeded PRNG (both sides replay the same draws). */
export class Prng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0 || 0x9e3779b9;
  }
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** A KeyValue as etcd3 hands it over (Buffers, decimal strings), in the form programs record. */
export interface Kv {
  key: string;
  value: string;
  create: string;
  mod: string;
  version: string;
  lease: string;
}

interface RawKv {
  key: Buffer;
  value: Buffer;
  create_revision: string;
  mod_revision: string;
  version: string;
  lease: string;
}

export function kvOf(kv: unknown): Kv {
  const k = kv as RawKv;
  return {
    key: k.key.toString('latin1'),
    value: k.value.toString('latin1'),
    create: String(k.create_revision),
    mod: String(k.mod_revision),
    version: String(k.version),
    lease: String(k.lease),
  };
}

/** Exclusive end of the range `prefix` names (etcd's prefix rule), as a Buffer. */
export function prefixEnd(prefix: string): Buffer {
  const b = Buffer.from(prefix, 'latin1');
  for (let i = b.length - 1; i >= 0; i--) {
    if (b[i]! < 0xff) {
      const end = Buffer.from(b.subarray(0, i + 1));
      end[i]!++;
      return end;
    }
  }
  return Buffer.from([0]);
}

/** One watch event as programs record it (prev only when the event carried a prev_kv). */
export interface Ev {
  type: string;
  kv: Kv;
  prev?: Kv;
}

/** Everything one etcd3 Watcher emitted. */
export interface WatchLog {
  readonly watcher: Watcher;
  readonly events: Ev[];
  /** Highest mod_revision among the events received (0 before any). */
  maxMod: number;
  /** 'data' responses (batching is timing: reported, never compared). */
  responses: number;
  readonly errors: string[];
  readonly disconnects: string[];
  ends: number;
}

/** Records a watcher's events from its 'data' responses, and wakes `until`s on each. */
export function recordWatcher(t: Pick<ProgramContext, 'changed'>, watcher: Watcher): WatchLog {
  const log: WatchLog = { watcher, events: [], maxMod: 0, responses: 0, errors: [], disconnects: [], ends: 0 };
  watcher.on('data', (res) => {
    log.responses++;
    for (const e of res.events) {
      const ev: Ev = { type: String(e.type), kv: kvOf(e.kv) };
      if (e.prev_kv !== null && e.prev_kv !== undefined) ev.prev = kvOf(e.prev_kv);
      log.events.push(ev);
      log.maxMod = Math.max(log.maxMod, Number(e.kv.mod_revision));
    }
    t.changed();
  });
  watcher.on('error', (err) => {
    log.errors.push(`${err.name}: ${err.message}`);
    t.changed();
  });
  watcher.on('disconnected', (err) => {
    log.disconnects.push(`${err.name}: ${err.message}`);
    t.changed();
  });
  watcher.on('end', () => {
    log.ends++;
    t.changed();
  });
  return log;
}

/** `p`, or `fallback` once `ms` have passed without it settling (for cleanup that must not hang a failed run). */
export async function withDeadline<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
  });
  try {
    return await Promise.race([p, gaveUp]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Cancels a watcher, giving up after `ms` (a watcher the server already canceled, or a side that stopped
 * answering, would otherwise leave cancel() pending forever).
 */
export async function cancelWatcher(log: WatchLog, ms = 2000): Promise<boolean> {
  if (log.errors.length > 0 || log.ends > 0) return true;
  return withDeadline(log.watcher.cancel().then(() => true), ms, false);
}
