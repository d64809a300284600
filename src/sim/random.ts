/**
 * Randomness for the simulator. Every random choice — lease IDs, fault injection, schedule
 * perturbation in property tests — comes from one seeded {@link SimRandom}, so a failing run is
 * replayed exactly from its seed. Nothing in the project may call Math.random.
 */

import { uniformBigInt } from 'pure-rand/distribution/uniformBigInt';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plusFromState } from 'pure-rand/generator/xoroshiro128plus';
import type { RandomGenerator } from 'pure-rand/types/RandomGenerator';

const MASK64 = (1n << 64n) - 1n;
/** Largest etcd lease ID: lease IDs are positive int64 (etcdserver masks with 1<<63 - 1 and skips NoLease = 0). */
const MAX_INT64 = (1n << 63n) - 1n;

/** SplitMix64 finalizer: a bijective 64-bit mixer, used to turn seeds and name hashes into stream keys. */
function mix64(x: bigint): bigint {
  let z = x & MASK64;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return z ^ (z >> 31n);
}

const utf8 = new TextEncoder();

/** 64-bit FNV-1a of the UTF-8 bytes of `s`: a stable, platform-independent hash of a stream name. */
export function fnv1a64(s: string): bigint {
  let h = 0xcbf29ce484222325n;
  for (const byte of utf8.encode(s)) h = ((h ^ BigInt(byte)) * 0x100000001b3n) & MASK64;
  return h;
}

/** Seeds a xoroshiro128+ state from a 64-bit key by SplitMix64 expansion (never the all-zero state). */
function generatorFor(key: bigint): RandomGenerator {
  const GAMMA = 0x9e3779b97f4a7c15n;
  const s0 = mix64(key + GAMMA);
  const s1 = mix64(key + 2n * GAMMA);
  const i32 = (x: bigint): number => Number(BigInt.asIntN(32, x));
  // pure-rand's state layout is [s0 high, s0 low, s1 high, s1 low].
  return xoroshiro128plusFromState([i32(s0 >> 32n), i32(s0), i32(s1 >> 32n), i32(s1)]);
}

function normalizeSeed(seed: number | bigint): bigint {
  if (typeof seed === 'number' && !Number.isSafeInteger(seed)) {
    throw new RangeError(`seed must be a safe integer or a bigint, got ${seed}`);
  }
  return BigInt.asUintN(64, BigInt(seed));
}

/**
 * Seeded pseudo-random stream (xoroshiro128+ from pure-rand).
 *
 * A stream is identified by its root seed and its fork path; {@link fork} derives a child from
 * that identity (never from how much the parent has consumed), so each subsystem — the lessor's ID
 * generator, a fault injector — owns its own stream and adding or removing random draws in one
 * subsystem never shifts the sequence another one sees.
 */
export class SimRandom {
  /** Root seed, reduced to an unsigned 64-bit value (so -1 and 2^64-1 name the same run). */
  readonly seed: bigint;
  private streamPath = '';
  private key: bigint;
  private rng: RandomGenerator;

  constructor(seed: number | bigint) {
    this.seed = normalizeSeed(seed);
    this.key = this.seed;
    this.rng = generatorFor(this.key);
  }

  /** Fork names from the root, joined by '/' ('' for the root); for logs and failure reports. */
  get path(): string {
    return this.streamPath;
  }

  /**
   * An independent stream named `name` under this one. Pure function of (seed, path, name): calling
   * it twice with the same name yields two streams producing the same sequence.
   */
  fork(name: string): SimRandom {
    const child = new SimRandom(this.seed);
    child.streamPath = this.streamPath === '' ? name : `${this.streamPath}/${name}`;
    child.key = mix64(this.key ^ mix64(fnv1a64(name)));
    child.rng = generatorFor(child.key);
    return child;
  }

  /** Uniform integer in [min, max], both inclusive (safe integers). */
  nextInt(min: number, max: number): number {
    if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min > max) {
      throw new RangeError(`nextInt: need safe integers min <= max, got [${min}, ${max}]`);
    }
    return uniformInt(this.rng, min, max);
  }

  /**
   * Uniform bigint in [1, 2^63-1]: the space of etcd lease IDs (positive int64, 0 = NoLease).
   * Drawn as an exact bigint — values above 2^53 cannot round-trip through a JS number.
   */
  nextUint63(): bigint {
    return uniformBigInt(this.rng, 1n, MAX_INT64);
  }

  /** Uniform float in [0, 1) with 53 random bits. */
  nextFloat(): number {
    return uniformFloat64(this.rng);
  }

  /** True with probability `p` (default 1/2); for fault injection such as "drop this keepalive". */
  nextBool(p = 0.5): boolean {
    if (!(p >= 0 && p <= 1)) throw new RangeError(`nextBool: probability must be in [0, 1], got ${p}`);
    return this.nextFloat() < p;
  }

  /** A uniformly chosen element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick: empty array');
    return items[this.nextInt(0, items.length - 1)]!;
  }

  /** Shuffles `items` in place (Fisher–Yates) and returns it. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.nextInt(0, i);
      const tmp = items[i]!;
      items[i] = items[j]!;
      items[j] = tmp;
    }
    return items;
  }
}

/**
 * A seed nobody chose: host time mixed with the host's randomness, for runs that explore (`etcdsim diff`
 * without --seed). The run prints it, so it replays like any other seed.
 */
export function freshSeed(): number {
  return (Date.now() ^ Math.floor(Math.random() * 0x100000000)) | 0;
}
