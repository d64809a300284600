/**
 * What the shadow tells its user: per RPC, how many calls it saw, compared, left uncompared (and why) and
 * found divergent; a live line of totals; and each divergence as a directory of files — the request, both
 * answers, and the requests since the last agreement as a replayable scenario (scenario.ts).
 *
 * A divergence is the simulator answering a request differently from the real etcd, after normalising only
 * what etcd leaves free (src/diff/normalise.ts); the application always got etcd's answer.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Buffer } from 'node:buffer';

export interface RpcCounts {
  calls: number;
  compared: number;
  divergences: number;
  /** Calls (or stream responses) seen but not compared, by reason. */
  notCompared: Map<string, number>;
}

export interface DivergenceRecord {
  /** `/etcdserverpb.KV/Range`, or the stream and watch it happened on. */
  readonly rpc: string;
  readonly where: string;
  readonly request: unknown;
  readonly etcd: string;
  readonly etcdsim: string;
  /** The revision the real etcd answered at. */
  readonly revision: number | undefined;
  /** The replayable scenario text (scenario.ts). */
  readonly scenario: string;
  /** The same steps as a script `etcdsim run` plays (script.ts). */
  readonly script: string;
}

/** The row that counts the calls of every method past the report's bound on rows. */
export const OTHER_RPCS = '(other methods)';

export class ShadowReport {
  readonly rpcs = new Map<string, RpcCounts>();
  events = 0;
  divergences = 0;
  private written = 0;

  constructor(
    /** Where divergences are written (undefined: not written). */
    private readonly dir: string | undefined,
    /** Most divergence directories written (the count goes on). */
    private readonly maxWritten = 100,
    /**
     * Most rows: a row is made for each method path a client names, etcd's or not (a path etcd does not serve
     * is counted as an unknown method), so past this many the rest share one row, OTHER_RPCS.
     */
    private readonly maxRows = 1000,
  ) {}

  rpc(name: string): RpcCounts {
    let c = this.rpcs.get(name);
    if (c === undefined) {
      if (this.rpcs.size >= this.maxRows && name !== OTHER_RPCS) return this.rpc(OTHER_RPCS);
      c = { calls: 0, compared: 0, divergences: 0, notCompared: new Map() };
      this.rpcs.set(name, c);
    }
    return c;
  }

  call(name: string): void {
    this.rpc(name).calls++;
  }

  compared(name: string): void {
    this.rpc(name).compared++;
  }

  notCompared(name: string, why: string): void {
    const m = this.rpc(name).notCompared;
    m.set(why, (m.get(why) ?? 0) + 1);
  }

  /** Records a divergence; returns the directory it was written to (if any). */
  divergence(d: DivergenceRecord): string | undefined {
    this.divergences++;
    this.rpc(d.rpc).divergences++;
    if (this.dir === undefined || this.written >= this.maxWritten) return undefined;
    this.written++;
    const sub = join(this.dir, `divergence-${String(this.divergences).padStart(4, '0')}`);
    mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, 'divergence.json'), JSON.stringify({ rpc: d.rpc, where: d.where, revision: d.revision, etcd: JSON.parse(d.etcd), etcdsim: JSON.parse(d.etcdsim) }, null, 2) + '\n');
    writeFileSync(join(sub, 'request.json'), JSON.stringify(d.request, jsonBytes, 2) + '\n');
    writeFileSync(join(sub, 'scenario.json'), d.scenario);
    writeFileSync(join(sub, 'scenario.etcdsim'), d.script);
    return sub;
  }

  /** One line of totals (the live count). */
  line(): string {
    let calls = 0;
    let compared = 0;
    for (const c of this.rpcs.values()) {
      calls += c.calls;
      compared += c.compared;
    }
    return `etcdsim shadow: ${calls} requests, ${compared} compared, ${this.events} events, ${this.divergences} divergences`;
  }

  /** The summary at exit: one line per RPC. */
  summary(): string[] {
    const names = [...this.rpcs.keys()].sort();
    const w = Math.max(3, ...names.map((n) => n.length));
    const lines = [`${'rpc'.padEnd(w)}  ${'calls'.padStart(8)}  ${'compared'.padStart(8)}  ${'diverged'.padStart(8)}  not compared`];
    for (const n of names) {
      const c = this.rpcs.get(n)!;
      const why = [...c.notCompared].map(([k, v]) => `${v} ${k}`).join(', ');
      lines.push(`${n.padEnd(w)}  ${String(c.calls).padStart(8)}  ${String(c.compared).padStart(8)}  ${String(c.divergences).padStart(8)}  ${why}`);
    }
    lines.push(this.line().replace(/^etcdsim shadow: /, 'total: '));
    return lines;
  }
}

/** JSON.stringify replacer: bytes as latin1 text (as the differential's transcripts show them), bigints as strings. */
export function jsonBytes(_k: string, v: unknown): unknown {
  if (typeof v === 'bigint') return String(v);
  if (v !== null && typeof v === 'object' && (v as { type?: unknown }).type === 'Buffer' && Array.isArray((v as { data?: unknown }).data)) {
    return { latin1: Buffer.from((v as { data: number[] }).data).toString('latin1') };
  }
  return v;
}
