/**
 * A member's Raft storage kept in memory (raft's MemoryStorage): what each Ready asks to persist — hard
 * state, entries (a later entry replaces any at or after its index, as a new leader's do), a snapshot
 * received — and what a restart reads back. Tests use it as a member's disk (what survives a crash is what
 * was saved); a process member without a data dir uses it as etcd would use a tmpfs.
 */
import type { Entry, HardState, Snapshot } from './messages.js';
import type { RaftStorage, Ready } from './ready.js';

/** Where a member saves each Ready before its messages leave (a WAL, or memory). */
export interface RaftPersistence {
  save(rd: Ready): void;
  /** The member snapshotted its state at `s.index`: the entries up to it are no longer needed. */
  snapshotted(s: Snapshot): void;
}

export class MemoryStorage implements RaftPersistence {
  private hard: HardState;
  private snap: Snapshot;
  private entries: Entry[];

  constructor(from: RaftStorage) {
    this.hard = from.hardState;
    this.snap = from.snapshot;
    this.entries = [...from.entries];
  }

  save(rd: Ready): void {
    if (rd.snapshot !== undefined) {
      this.snap = rd.snapshot;
      this.entries = [];
    }
    const first = rd.entries[0];
    if (first !== undefined) {
      // The entries held run contiguously: those at and after the first new index give way (a new leader's
      // entries replace an old one's), without copying the rest — a member's disk sees every Ready.
      const start = this.entries[0]?.index ?? first.index;
      this.entries.length = Math.max(0, Math.min(this.entries.length, first.index - start));
      for (const e of rd.entries) this.entries.push(e);
    }
    if (rd.hardState !== undefined) this.hard = rd.hardState;
  }

  snapshotted(s: Snapshot): void {
    this.snap = s;
    this.entries = this.entries.filter((e) => e.index > s.index);
  }

  /** What a restart reads. */
  storage(): RaftStorage {
    return { hardState: this.hard, snapshot: this.snap, entries: [...this.entries] };
  }
}
