/**
 * One simulated etcd member as a test holds it (`sim.server`): the member view every door takes (its
 * services, its release, etcd's token wait), the engine beneath it (the MVCC store, the lessor, the
 * watchable store), its clock, and the levers of one member — time passing, the flush of queued stream
 * responses, snapshot and restore (etcd's and the store's), a restart from its backend, a crash part-way
 * through a compaction, Defragment's effect. An interface, so that the published types say what a user may
 * rely on and no more: an EtcdServer implements it, and its wiring (the auth store, the delivery queue, the
 * ticker, the backend's buckets) stays with the floors and tests that reach for it (src/client's serverOf).
 */
import type { Lessor } from '../lease/index.js';
import type { MvccStore, StoreSnapshot } from '../mvcc/index.js';
import type { Clock } from '../sim/index.js';
import type { WatchableStore } from '../watch/index.js';
import type { CallContext } from './call_context.js';
import type { EtcdServices } from './etcd_server.js';
import type { MemberInfo } from './member_options.js';
import type { MemberView } from './member_view.js';
import type { CompactionCrash, MemberRestart, MemberSnapshot } from './restart.js';

/** `sim.server`: one simulated member, its engine and its levers (an EtcdServer is one). @public */
export interface EtcdServerView extends MemberView {
  /** etcd's v3 services in message form; a single member answers at once. */
  readonly services: EtcdServices;
  readonly clock: Clock;
  readonly mvcc: MvccStore;
  readonly lessor: Lessor;
  readonly watchable: WatchableStore;
  /** Whether auth is enabled, as AuthStatus answers (without the entry a call of it proposes). */
  readonly auth: { readonly enabled: boolean };
  /** The member's identity as its response headers carry it; replaced when the raft term moves. */
  readonly member: MemberInfo;
  /** The raft index: one entry per write request, lease grant, revoke or expiry, compaction and alarm. */
  readonly raftIndex: number;
  /** Status dbSize: etcd's bolt file, estimated; the quota is measured against it. */
  readonly dbSize: number;
  /** Status dbSizeInUse: the pages the retained revisions fill. */
  readonly dbSizeInUse: number;
  readonly quotaBackendBytes: number;
  readonly electionTimeoutMs: number;
  /** Lets `ms` of virtual time pass for the member (engine-level: no client code runs meanwhile). */
  advance(ms: number): void;
  /** Pushes queued stream responses to their listeners now; answers how many went. */
  flush(): number;
  /** Maintenance.Defragment's effect: the db file is rewritten to the data in use. */
  defragment(): void;
  /** The store and the auth store's persistent state, as etcd's snapshot carries them. */
  snapshot(): MemberSnapshot;
  restore(snapshot: StoreSnapshot | MemberSnapshot): void;
  /** `etcdctl snapshot save`'s file: etcd's bbolt db followed by its SHA-256. */
  etcdSnapshot(): Uint8Array;
  /** The member restarted from its backend (a process restart: tokens, watchers and streams gone). */
  restart(): MemberRestart;
  /** How many revisions a compaction's backend deletes per batch (etcd's --experimental-compaction-batch-limit). */
  readonly compactionBatchLimit: number;
  /** A compaction to `rev` that crashes after `afterBatches` of its batches, as etcd's can. */
  crashDuringCompaction(rev: number, afterBatches: number, ctx?: CallContext): CompactionCrash;
  /** Stops the member's timers. */
  close(): void;
}
