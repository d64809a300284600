/**
 * The replayable record of a shadow run: every request the simulator was given, in the order it applied
 * them (etcd's revision order), with etcd's answer, from the shadow's start. A divergence's directory holds
 * this list up to the divergent request, as JSON, so a run that diverged can be replayed on a simulator and
 * against a fresh etcd, request by request.
 *
 * Bounded: past `max` entries the oldest are dropped and the record says it no longer starts at the
 * shadow's start (a replay then needs the etcd's state at its first entry), as it does when the etcd held
 * data before the shadow started.
 */
import { Buffer } from 'node:buffer';
import { jsonBytes } from './report.js';

export interface ScenarioEntry {
  /** `KV.Put`, `Watch.Watch`, ... */
  readonly rpc: string;
  /** A Watch or LeaseKeepAlive stream: which one, numbered from 1 in the order they were opened. */
  readonly stream?: number | undefined;
  /** Absent: a stream response etcd sent by itself (a watch's events), kept for the script's expectations (script.ts). */
  readonly request?: unknown;
  /** etcd's answer (a stream request: the response it caused). */
  readonly etcd: unknown;
}

/** scenario.json as written. */
export interface ScenarioFile {
  readonly format: 'etcdsim-shadow-scenario/1';
  readonly etcdVersion: string;
  readonly startRevision: number;
  /**
   * false: the record does not start from a fresh etcd — older steps were dropped (the record is bounded),
   * or the etcd had a history or leases when the shadow started (seed.ts) — so a replay on a fresh etcd
   * lacks the state the first step was answered in.
   */
  readonly complete: boolean;
  readonly steps: readonly ScenarioEntry[];
}

export class ScenarioLog {
  /** A ring once full: `head` is the oldest entry's index (an array's splice at the front moved all 10 000 per call). */
  private readonly entries: ScenarioEntry[] = [];
  private head = 0;
  private dropped = 0;

  constructor(
    private readonly startRevision: number,
    private readonly etcdVersion: string,
    private readonly max = 10_000,
    /** The etcd had a history or leases when the shadow started. */
    private readonly seeded = false,
  ) {}

  add(rpc: string, request: unknown, etcd: unknown, stream?: number): void {
    const entry = stream === undefined ? { rpc, request, etcd } : request === undefined ? { rpc, stream, etcd } : { rpc, stream, request, etcd };
    if (this.entries.length < this.max) {
      this.entries.push(entry);
      return;
    }
    this.entries[this.head] = entry;
    this.head = (this.head + 1) % this.max;
    this.dropped++;
  }

  /** Entries held (at most `max`). */
  get size(): number {
    return this.entries.length;
  }

  file(): ScenarioFile {
    const steps = this.head === 0 ? this.entries : [...this.entries.slice(this.head), ...this.entries.slice(0, this.head)];
    return { format: 'etcdsim-shadow-scenario/1', etcdVersion: this.etcdVersion, startRevision: this.startRevision, complete: this.dropped === 0 && !this.seeded, steps };
  }

  text(): string {
    return JSON.stringify(this.file(), jsonBytes, 1) + '\n';
  }
}

/** Reads scenario.json back: `{ latin1 }` objects become bytes again. */
export function parseScenario(text: string): ScenarioFile {
  const f = JSON.parse(text, (_k, v: unknown) => {
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const keys = Object.keys(v);
      if (keys.length === 1 && keys[0] === 'latin1' && typeof (v as { latin1: unknown }).latin1 === 'string') return Buffer.from((v as { latin1: string }).latin1, 'latin1');
    }
    return v;
  }) as ScenarioFile;
  if (f?.format !== 'etcdsim-shadow-scenario/1' || !Array.isArray(f.steps)) throw new Error('not a scenario.json written by etcdsim shadow');
  return f;
}
