/**
 * Benchmark harness: times a subject against a baseline in the same run, so a row's ratio compares two
 * figures taken on the same machine under the same load.
 *
 * Benchmarks are not src: they may read wall time (process.hrtime.bigint). Randomness still comes from a
 * seed, so two runs do the same work.
 *
 * How a pair is measured: warm-up rounds of both (untimed, for the JIT), then `rounds` timed rounds that
 * alternate which of the two goes first; each side's figure is the median of its rounds' ns/op. Before
 * every timed round the state is built by `setup` (untimed) and, unless a row opts out, a full GC is
 * forced, so one round's garbage is not collected on the next round's clock.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { SimRandom } from '../src/sim/index.js';

/** One benchmarked operation: untimed state building, then timed work that reports how many ops it did. */
export interface Case<S> {
  /** Builds the state one round works on (untimed). `warmup` lets a case warm up on a smaller size. */
  setup(warmup: boolean): S;
  /** The timed work. Returns the number of operations done, which divides the round's time. */
  run(state: S): number;
}

export interface PairOptions {
  /** Timed rounds per side (the median is taken; odd counts give a true middle). */
  readonly rounds: number;
  /** Untimed warm-up rounds per side. */
  readonly warmup: number;
  /**
   * Force a full GC before every round (default true). Read-only rows over a large heap turn it off: a
   * full GC of a 1M-key store costs about a second and their rounds leave little garbage.
   */
  readonly gc?: boolean | undefined;
}

/** The timed figures of one side of a pair. */
export interface Sample {
  /** Median over rounds of ns per operation. */
  readonly nsPerOp: number;
  /** ns per operation of every timed round, in the order they ran. */
  readonly rounds: readonly number[];
  /** Operations per timed round (of the last round). */
  readonly ops: number;
}

/** What a row's subject is held to: ratio = subject ns/op ÷ baseline ns/op must be at most maxRatio. */
export interface Target {
  readonly maxRatio: number;
}

/** One line of the results table. */
export interface Row {
  readonly name: string;
  /** What one "op" is for this row ('op', 'key', 'txn', ...). */
  readonly unit: string;
  readonly subject: Sample;
  readonly baselineName: string;
  readonly baseline: Sample;
  /** subject.nsPerOp / baseline.nsPerOp. */
  readonly ratio: number;
  readonly target?: Target | undefined;
  /** etcd's own figure for the same operation, for orientation (not a pass/fail line). */
  readonly reference?: { readonly label: string; readonly nsPerOp: number } | undefined;
  readonly note?: string | undefined;
  /**
   * What the figures are: 'time' (default) — nsPerOp is ns per `unit`; 'bytes' — nsPerOp holds a size in
   * bytes (e.g. a process's peak RSS), printed as such; the ratio is still subject ÷ baseline.
   */
  readonly measure?: 'time' | 'bytes' | undefined;
}

/** Options the runner gives every section. */
export interface BenchContext {
  /** Smaller sizes and fewer rounds (a smoke run). */
  readonly quick: boolean;
  /** Progress output; goes to stderr so that `--json` keeps stdout clean. */
  log(message: string): void;
}

/** A group of rows about one area (mvcc, watch, lease, ...), in its own bench/<area>.bench.ts. */
export interface BenchSection {
  /** Short name used by `--only`. */
  readonly name: string;
  readonly title: string;
  run(ctx: BenchContext): Row[] | Promise<Row[]>;
}

// ---------------------------------------------------------------------------------------------------
// GC control: `npm run bench` runs plain node, so expose gc at runtime (the function is reachable from a
// fresh context once the flag is set). Without it the harness still works, with noisier rounds.

setFlagsFromString('--expose-gc');
const maybeGc: unknown = runInNewContext('typeof gc === "function" ? gc : undefined');
const gcFn: (() => void) | undefined = typeof maybeGc === 'function' ? (maybeGc as () => void) : undefined;

/** Forces a full garbage collection if the runtime allows it. */
export function collectGarbage(): void {
  gcFn?.();
}

export const gcAvailable: boolean = gcFn !== undefined;

// ---------------------------------------------------------------------------------------------------

/** Keeps results alive so the optimizer cannot drop the work that produced them. */
export let sink = 0;
export function consume(n: number): void {
  sink = (sink + n) | 0;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

function timeRound<S>(c: Case<S>, warmup: boolean, gc: boolean): { ns: number; ops: number } {
  let state: S | undefined = c.setup(warmup);
  if (gc) collectGarbage();
  const t0 = process.hrtime.bigint();
  const ops = c.run(state);
  const t1 = process.hrtime.bigint();
  state = undefined;
  if (!(ops > 0)) throw new Error(`a benchmark round reported ${ops} operations`);
  return { ns: Number(t1 - t0), ops };
}

/**
 * Measures a subject and its baseline in interleaved rounds (baseline first on even rounds, subject
 * first on odd ones) and returns both medians.
 */
export function measurePair<S, B>(subject: Case<S>, baseline: Case<B>, opts: PairOptions): { subject: Sample; baseline: Sample } {
  const gc = opts.gc ?? true;
  for (let i = 0; i < opts.warmup; i++) {
    timeRound(baseline, true, gc);
    timeRound(subject, true, gc);
  }
  const s: number[] = [];
  const b: number[] = [];
  let sOps = 0;
  let bOps = 0;
  for (let i = 0; i < opts.rounds; i++) {
    const order = i % 2 === 0 ? ['b', 's'] : ['s', 'b'];
    for (const side of order) {
      if (side === 'b') {
        const r = timeRound(baseline, false, gc);
        b.push(r.ns / r.ops);
        bOps = r.ops;
      } else {
        const r = timeRound(subject, false, gc);
        s.push(r.ns / r.ops);
        sOps = r.ops;
      }
    }
  }
  return {
    subject: { nsPerOp: median(s), rounds: s, ops: sOps },
    baseline: { nsPerOp: median(b), rounds: b, ops: bOps },
  };
}

/** Builds a row from a measured pair. */
export function row(
  spec: {
    name: string;
    unit: string;
    baselineName: string;
    target?: Target | undefined;
    reference?: { label: string; nsPerOp: number } | undefined;
    note?: string | undefined;
  },
  m: { subject: Sample; baseline: Sample },
): Row {
  return { ...spec, subject: m.subject, baseline: m.baseline, ratio: m.subject.nsPerOp / m.baseline.nsPerOp };
}

/** Whether a row meets its target; undefined when it has none. */
export function targetMet(r: Row): boolean | undefined {
  return r.target === undefined ? undefined : r.ratio <= r.target.maxRatio;
}

/** (max - min) / median of a sample's rounds: a rough noise figure. */
export function spread(s: Sample): number {
  if (s.rounds.length === 0 || s.nsPerOp === 0) return 0;
  return (Math.max(...s.rounds) - Math.min(...s.rounds)) / s.nsPerOp;
}

// ---------------------------------------------------------------------------------------------------
// Deterministic data. Bulk bytes come from a small xorshift generator (SimRandom's per-call cost is too
// high for tens of megabytes), seeded from a named SimRandom stream so the data is a function of the seed.

/** A fast seeded 32-bit generator (xorshift128) for bulk benchmark data. */
export class FastRandom {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number, stream: string) {
    const r = new SimRandom(seed).fork(stream);
    this.a = r.nextInt(1, 0x7fffffff);
    this.b = r.nextInt(1, 0x7fffffff);
    this.c = r.nextInt(1, 0x7fffffff);
    this.d = r.nextInt(1, 0x7fffffff);
  }

  nextU32(): number {
    let t = this.d;
    const s = this.a;
    this.d = this.c;
    this.c = this.b;
    this.b = s;
    t ^= t << 11;
    t ^= t >>> 8;
    this.a = (t ^ s ^ (s >>> 19)) >>> 0;
    return this.a;
  }

  /** Uniform integer in [0, n) for n <= 2^32 (modulo bias is irrelevant here). */
  below(n: number): number {
    return this.nextU32() % n;
  }

  fill(bytes: Uint8Array): void {
    let i = 0;
    for (; i + 4 <= bytes.length; i += 4) {
      const x = this.nextU32();
      bytes[i] = x & 0xff;
      bytes[i + 1] = (x >>> 8) & 0xff;
      bytes[i + 2] = (x >>> 16) & 0xff;
      bytes[i + 3] = x >>> 24;
    }
    for (; i < bytes.length; i++) bytes[i] = this.nextU32() & 0xff;
  }

  /** Fisher-Yates shuffle in place. */
  shuffle<T extends { length: number; [i: number]: number }>(xs: T): T {
    for (let i = xs.length - 1; i > 0; i--) {
      const j = this.below(i + 1);
      const t = xs[i]!;
      xs[i] = xs[j]!;
      xs[j] = t;
    }
    return xs;
  }
}

// ---------------------------------------------------------------------------------------------------
// Formatting.

/** A byte count as KiB / MiB / GiB. */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

/** One of a row's figures as the table shows it: a time per op, or a size for 'bytes' rows. */
export function formatFigure(r: Row, value: number, withUnit: boolean): string {
  if (r.measure === 'bytes') return formatBytes(value);
  return withUnit ? `${formatNs(value)}/${r.unit}` : formatNs(value);
}

export function formatNs(ns: number): string {
  if (!Number.isFinite(ns)) return String(ns);
  if (ns < 1_000) return `${ns.toFixed(ns < 10 ? 2 : ns < 100 ? 1 : 0)} ns`;
  if (ns < 1_000_000) return `${(ns / 1_000).toFixed(2)} µs`;
  if (ns < 1_000_000_000) return `${(ns / 1_000_000).toFixed(2)} ms`;
  return `${(ns / 1_000_000_000).toFixed(2)} s`;
}
