/**
 * `/metrics`: etcd's Prometheus metrics that users assert on or alert on, under etcd's names, HELP texts
 * and types (as etcd 3.4.23 prints them), in the text format, through prom-client. Values are read from
 * the member when scraped (collect callbacks); the only counting done as the member works is what no
 * state holds — puts and deletes (one listener call per commit) and lease grants and revokes (per lessor
 * event) — and what this front door itself sees (health checks).
 *
 * Differences from etcd, by design of a single in-process member: leader metrics are those of a member
 * that has led since it started (has_leader 1, one leader change); proposals committed / applied are
 * the member's raft index; etcd_mvcc_delete_total counts deleted keys (etcd counts DeleteRange operations);
 * range and txn counters and the grpc_server_* families are not kept (they would cost every request).
 */
import type { Registry } from 'prom-client';
import type { EtcdServer } from '../server/index.js';

/** A member's metrics and the counters this front door feeds. */
export interface MemberMetrics {
  /** etcd_server_health_success / _failures: /health answers. */
  healthChecked(ok: boolean): void;
  /** The scrape: the text and its content type (`text/plain; version=0.0.4; charset=utf-8`). */
  scrape(): Promise<{ readonly body: string; readonly contentType: string }>;
  /** Stops the listeners on the member. */
  close(): void;
}

/** The cluster version etcd reports for a server version: major.minor.0. */
export function clusterVersionOf(serverVersion: string): string {
  const m = /^(\d+)\.(\d+)/.exec(serverVersion);
  return m === null ? serverVersion : `${m[1]}.${m[2]}.0`;
}

export function createMemberMetrics(s: EtcdServer): MemberMetrics {
  let puts = 0;
  let deletes = 0;
  let granted = 0;
  let revoked = 0;
  const unsubscribeKv = s.mvcc.subscribe((_rev, events) => {
    for (const ev of events) {
      if (ev.type === 'PUT') puts++;
      else deletes++;
    }
  });
  const unsubscribeLease = s.lessor.subscribe((ev) => {
    if (ev.type === 'grant') granted++;
    else if (ev.type === 'revoke') revoked++;
  });
  let healthOk = 0;
  let healthFailed = 0;
  let registry: Promise<Registry> | undefined;
  return {
    healthChecked(ok) {
      if (ok) healthOk++;
      else healthFailed++;
    },
    async scrape() {
      registry ??= registryOf();
      const r = await registry;
      // prom-client separates metric families with a blank line; Go's client does not.
      return { body: (await r.metrics()).replace(/\n\n+/g, '\n'), contentType: r.contentType };
    },
    close() {
      unsubscribeKv();
      unsubscribeLease();
    },
  };

  /**
   * The registry, made at the first scrape: prom-client loads http, https and zlib for its push gateway, a
   * good part of a member's start-up, and what it reports is read when scraped anyway.
   */
  async function registryOf(): Promise<Registry> {
    const { Counter, Gauge, Registry } = await import('prom-client');
    const registry = new Registry();
    const registers = [registry];
    const gauge = (name: string, help: string, value: () => number): void => {
      new Gauge({ name, help, registers, collect() {
        this.set(value());
      } });
    };
    const counter = (name: string, help: string, value: () => number): void => {
      new Counter({ name, help, registers, collect() {
        this.reset();
        this.inc(value());
      } });
    };
    const labelled = (name: string, help: string, label: string, value: () => string): void => {
      new Gauge({ name, help, labelNames: [label], registers, collect() {
        this.reset();
        this.set({ [label]: value() }, 1);
      } });
    };

    const clusterVersion = clusterVersionOf(s.member.version);
    labelled('etcd_cluster_version', "Which version is running. 1 for 'cluster_version' label with current cluster version", 'cluster_version', () => clusterVersion.replace(/\.0$/, ''));
    labelled('etcd_server_version', "Which version is running. 1 for 'server_version' label with current version.", 'server_version', () => s.member.version);
    labelled('etcd_server_id', "Server or member ID in hexadecimal format. 1 for 'server_id' label with current ID.", 'server_id', () => s.member.memberId.toString(16));
    gauge('etcd_server_has_leader', 'Whether or not a leader exists. 1 is existence, 0 is not.', () => 1);
    gauge('etcd_server_is_leader', 'Whether or not this member is a leader. 1 if is, 0 otherwise.', () => 1);
    gauge('etcd_server_is_learner', 'Whether or not this member is a learner. 1 if is, 0 otherwise.', () => 0);
    counter('etcd_server_leader_changes_seen_total', 'The number of leader changes seen.', () => 1);
    gauge('etcd_server_proposals_committed_total', 'The total number of consensus proposals committed.', () => s.raftIndex);
    gauge('etcd_server_proposals_applied_total', 'The total number of consensus proposals applied.', () => s.raftIndex);
    gauge('etcd_server_proposals_pending', 'The current number of pending proposals to commit.', () => 0);
    counter('etcd_server_proposals_failed_total', 'The total number of failed proposals seen.', () => 0);
    counter('etcd_server_health_success', 'The total number of successful health checks', () => healthOk);
    counter('etcd_server_health_failures', 'The total number of failed health checks', () => healthFailed);
    const dbHelp = 'Total size of the underlying database physically allocated in bytes.';
    gauge('etcd_mvcc_db_total_size_in_bytes', dbHelp, () => s.dbSize);
    gauge('etcd_debugging_mvcc_db_total_size_in_bytes', dbHelp, () => s.dbSize);
    gauge('etcd_mvcc_db_total_size_in_use_in_bytes', 'Total size of the underlying database logically in use in bytes.', () => s.dbSizeInUse);
    gauge('etcd_debugging_mvcc_keys_total', 'Total number of keys.', () => liveKeys(s));
    gauge('etcd_debugging_mvcc_current_revision', 'The current revision of store.', () => s.mvcc.currentRevision);
    gauge('etcd_debugging_mvcc_compact_revision', 'The revision of the last compaction in store.', () => s.mvcc.compactRevision);
    counter('etcd_mvcc_put_total', 'Total number of puts seen by this member.', () => puts);
    counter('etcd_mvcc_delete_total', 'Total number of deletes seen by this member.', () => deletes);
    gauge('etcd_debugging_mvcc_watch_stream_total', 'Total number of watch streams.', () => s.services.watch.calls().length);
    gauge('etcd_debugging_mvcc_watcher_total', 'Total number of watchers.', () => {
      let n = 0;
      for (const c of s.services.watch.calls()) n += c.stream.watchIds().length;
      return n;
    });
    counter('etcd_debugging_lease_granted_total', 'The total number of granted leases.', () => granted);
    counter('etcd_debugging_lease_revoked_total', 'The total number of revoked leases.', () => revoked);
    return registry;
  }
}

/** Keys with a live value (etcd's keys gauge: up at a key's creation, down at its deletion). */
function liveKeys(s: EtcdServer): number {
  return s.mvcc.range({ key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]), countOnly: true }).count;
}
