/**
 * `etcdsim etcd` as one process of a cluster: --initial-cluster names several members, and this process is
 * the one --name names. It starts its member (src/peer/process_member.ts) on its data dir — a new member
 * of the cluster --initial-cluster describes, or the member the dir holds — opens its peer port on
 * --listen-peer-urls, finds the others on their peer URLs, and serves its client port once it has
 * published itself through Raft. Its log is etcd's, in etcd's order: the banner, the members added, Raft's
 * roles and leader as they move, `published ... to cluster`, then `ready to serve client requests` and
 * `enabled capabilities for version` (the lines etcd's e2e harness waits for).
 */
import { readFileSync } from 'node:fs';
import { dataDirLayout, walExists } from '../../storage/index.js';
import { RealClock } from '../../sim/index.js';
import { CliError } from '../io.js';
import type { ServeCommandOptions } from '../serve.js';
import type { EtcdLog } from './log.js';
import { boolValue } from './flag_set.js';
import { openError, type PeerTlsFiles } from './tls_flags.js';
import { addedMemberLine, appliedSnapshotLine, bannerLines, electedLine, publishedLines, readyLines, removedMemberLine, roleLine, tickAdvanceLine, updatedMemberLine, type StartedMember } from './start_log.js';

export interface ProcessMemberRun {
  readonly opts: ServeCommandOptions & { readonly initialCluster: NonNullable<ServeCommandOptions['initialCluster']> };
  readonly member: StartedMember;
  readonly get: (flag: string) => string | undefined;
  readonly log: EtcdLog;
  /** TLS on the peer port and to the peers (https peer URLs), as checkPeerTls found the files. */
  readonly peerTls?: PeerTlsFiles | undefined;
  /** Called once, after the ready lines (runEtcd's hook). */
  readonly serving?: (() => void) | undefined;
}

/** Starts the member and serves it; never settles while it serves (the process exits on a signal). */
export async function runProcessMember(r: ProcessMemberRun): Promise<number> {
  const { opts, get, log } = r;
  const layout = dataDirLayout(r.member.dataDir, get('wal-dir'));
  const join = !walExists(layout.walDir) && get('initial-cluster-state') === 'existing';
  const { ProcessMember, JoinError, initialMemberId, peerAddressOf } = await import('../../peer/process_member.js');
  const { serveProcessMember } = await import('../../grpc/serve_process.js');
  const own = opts.initialCluster.find((m) => m.name === r.member.name);
  const listenPeer = peerAddressOf(opts.listenPeerUrls?.[0] ?? 'http://localhost:2380');
  const token = opts.initialClusterToken ?? 'etcd-cluster';
  let started: StartedMember = { ...r.member, memberId: own === undefined ? 0n : initialMemberId(own, token) };
  let serving = false;
  let publishedEarly = false;
  const clock = new RealClock({ speed: 1 });
  const ready = (): void => {
    for (const e of readyLines(started)) log.log(e);
    r.serving?.();
  };
  const tickAdvance = get('initial-election-tick-advance') === undefined || boolValue(get('initial-election-tick-advance'));
  let served;
  try {
    served = await serveProcessMember({ ...opts, clock }, async (endpoint) => {
      const pm = await ProcessMember.start({
        name: r.member.name,
        initialCluster: opts.initialCluster,
        initialClusterToken: token,
        clientUrls: r.member.advertiseClientUrls.length > 0 ? r.member.advertiseClientUrls : [endpoint],
        listenPeer,
        layout,
        clock,
        server: {
          seed: opts.seed,
          etcdVersion: opts.etcdVersion,
          maxTxnOps: opts.maxTxnOps,
          maxRequestBytes: opts.maxRequestBytes,
          heartbeatIntervalMs: opts.heartbeatIntervalMs,
          electionTicks: opts.electionTicks,
          watchProgressNotifyIntervalMs: opts.watchProgressNotifyIntervalMs,
          quotaBackendBytes: opts.quotaBackendBytes,
          authTokenTTL: opts.authTokenTTL,
          authHashCost: opts.authHashCost,
          authTokenProvider: opts.authTokenProvider,
          clientCertAuth: opts.tls?.clientCertAuth === true,
          strictReconfigCheck: opts.strictReconfigCheck,
          ...leaseCheckpointOf(get),
        },
        leaseCheckpointPersist: leaseCheckpointOf(get).leaseCheckpoint && (boolValue(get('experimental-enable-lease-checkpoint-persist')) || r.member.version >= '3.6'),
        ...(r.peerTls === undefined ? {} : { peerTls: readPeerTls(r.peerTls) }),
        heartbeatMs: r.member.heartbeatMs,
        electionMs: r.member.electionMs,
        preVote: opts.preVote ?? true,
        initialElectionTickAdvance: tickAdvance,
        join,
        snapshotCount: Number(r.member.snapshotCount),
        catchUpEntries: catchUpEntriesOf(get),
        maxSnapshots: Number(get('max-snapshots') ?? 5),
        maxWals: Number(get('max-wals') ?? 5),
        // The tests' Raft invariant check on every member's node (not an etcd variable: etcdsim's own).
        raftCheck: process.env['ETCDSIM_RAFT_CHECK'] === '1',
        seed: Number(BigInt.asUintN(32, BigInt(opts.seed ?? 0))),
        events: {
          role: (role, term) => log.log(roleLine(started.memberId, role, term)),
          leader: (leader, term) => log.log(electedLine(started.memberId, leader, term)),
          snapshotApplied: (was, snap) => log.log(appliedSnapshotLine(was, snap)),
          purged: (path) => log.log({ level: 'info', pkg: 'pkg/fileutil', text: `purged file ${path} successfully`, caller: 'fileutil/purge.go:104', msg: 'purged', fields: { path } }),
          membership: (cc, m) =>
            log.log(
              cc.type === 'remove' ? removedMemberLine(started, cc.id) : cc.type === 'update' ? updatedMemberLine(started, cc.id, m?.peerUrls ?? []) : addedMemberLine(started, cc.id, m?.peerUrls ?? []),
            ),
          published: () => {
            for (const e of publishedLines(started)) log.log(e);
            if (serving) ready();
            else publishedEarly = true;
          },
          raftViolated: (v) => {
            log.log({ level: 'fatal', pkg: 'raft', text: `Raft invariant broken: ${v.invariant}: ${v.detail}`, caller: 'raft/checker.go', msg: 'Raft invariant broken', fields: { invariant: v.invariant, detail: v.detail } });
            process.exit(3);
          },
          removed: () => {
            log.log({ level: 'warn', pkg: 'etcdserver', text: 'the member has been permanently removed from the cluster', caller: 'etcdserver/server.go:1072', msg: 'the member has been permanently removed from the cluster' });
            log.log({ level: 'warn', pkg: 'etcdserver', text: 'the data-dir used by this member must be removed.', caller: 'etcdserver/server.go:1073', msg: 'the data-dir used by this member must be removed' });
            process.exit(0);
          },
        },
      });
      started = {
        ...started,
        memberId: pm.id,
        clusterId: pm.clusterId,
        restart: pm.restarted ? { commitIndex: BigInt(pm.restartCommit), term: pm.node.term + 1n } : undefined,
      };
      for (const e of bannerLines(started)) log.log(e);
      if (log.isZap) log.log(tickAdvanceLine(tickAdvance, Math.round(r.member.electionMs / r.member.heartbeatMs)));
      pm.run();
      return pm;
    });
  } catch (err) {
    const host = opts.host ?? '127.0.0.1';
    const { bindError } = await import('../serve.js');
    if (err instanceof JoinError || (err instanceof Error && /couldn't find local name/.test(err.message))) throw new CliError(err.message, 1);
    throw new CliError(bindError(err, `${host.includes(':') ? `[${host}]` : host}:${opts.port ?? 2379}`), 1);
  }
  const { member: pm } = served;
  const stop = (signal: 'SIGINT' | 'SIGTERM'): void => {
    const word = signal === 'SIGINT' ? 'interrupt' : 'terminated';
    log.log({ level: 'info', pkg: 'pkg/osutil', text: `received ${word} signal, shutting down...`, caller: 'osutil/interrupt_unix.go:64', msg: 'received signal; shutting down', fields: { signal: word }, notice: true });
    pm.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  serving = true;
  if (publishedEarly) ready();
  return new Promise<number>(() => {});
}

/**
 * --experimental-enable-lease-checkpoint: the leader's lessor checkpoints remaining TTLs through Raft, every
 * 5 min (etcd's LeaseCheckpointInterval, which no flag sets; etcd's integration tests set it, and etcdsim's
 * tests through ETCDSIM_TEST_LEASE_CHECKPOINT_INTERVAL_MS).
 */
function leaseCheckpointOf(get: (flag: string) => string | undefined): { leaseCheckpoint: boolean; leaseCheckpointIntervalMs?: number } {
  const on = boolValue(get('experimental-enable-lease-checkpoint'));
  const interval = Number(process.env['ETCDSIM_TEST_LEASE_CHECKPOINT_INTERVAL_MS'] ?? 0);
  return { leaseCheckpoint: on, ...(interval > 0 ? { leaseCheckpointIntervalMs: interval } : {}) };
}

/** etcd 3.5's --experimental-snapshot-catchup-entries, 3.6's --snapshot-catchup-entries; undefined: etcd's 5000. */
function catchUpEntriesOf(get: (flag: string) => string | undefined): number | undefined {
  const v = get('snapshot-catchup-entries') ?? get('experimental-snapshot-catchup-entries');
  return v === undefined ? undefined : Number(v);
}

/** The peer TLS files' contents; a file that cannot be read gets etcd's `open` error. */
function readPeerTls(f: PeerTlsFiles): { cert: Buffer; key: Buffer; ca?: Buffer } {
  const read = (path: string): Buffer => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw openError(path, err);
    }
  };
  return { cert: read(f.certFile), key: read(f.keyFile), ...(f.trustedCaFile === undefined ? {} : { ca: read(f.trustedCaFile) }) };
}
