/**
 * The lines a starting, ready and stopping single-member etcd logs, in the order etcd 3.4.23 logs them
 * (observed, capnslog and zap): its identity and configuration, Raft becoming leader at term 2, the member
 * publishing its attributes ("published {Name:... ClientURLs:[...]} to cluster ..."), "ready to serve client
 * requests", the cluster version and "enabled capabilities for version" — the two lines etcd's e2e harness
 * waits for are "enabled capabilities for version" and "published" — and, on SIGINT / SIGTERM, the signal and
 * the skipped leadership transfer of a single voter.
 */
import type { EtcdVersion } from '../../etcd/index.js';
import type { LogEvent } from './log.js';

export interface StartedMember {
  readonly name: string;
  readonly dataDir: string;
  readonly version: EtcdVersion;
  /** The full release (3.4.23). */
  readonly serverVersion: string;
  readonly heartbeatMs: number;
  readonly electionMs: number;
  readonly snapshotCount: string;
  readonly advertiseClientUrls: readonly string[];
  readonly listenClientUrls: readonly string[];
  readonly peerUrls: readonly string[];
  readonly authToken: string;
  readonly memberId: bigint;
  readonly clusterId: bigint;
  readonly tls: boolean;
  /** The member restarted from its data dir (kept_member.ts): at this commit index, elected at this term. */
  readonly restart?: { readonly commitIndex: bigint; readonly term: bigint } | undefined;
}

const hex = (id: bigint): string => id.toString(16);

function info(pkg: string, text: string, caller: string, msg: string, fields?: Record<string, unknown>, notice?: boolean): LogEvent {
  return { level: 'info', pkg, text, caller, msg, fields, notice };
}

function raft(text: string, caller: string): LogEvent {
  return { level: 'info', pkg: 'raft', text, caller, msg: text };
}

/** From etcd's banner to its member elected and published. */
export function startupLines(m: StartedMember): LogEvent[] {
  const id = hex(m.memberId);
  const term = m.restart?.term ?? 2n;
  return [
    ...bannerLines(m),
    addedMemberLine(m, m.memberId, m.peerUrls),
    raft(`${id} became candidate at term ${term}`, 'raft/raft.go:719'),
    raft(`${id} became leader at term ${term}`, 'raft/raft.go:771'),
    electedLine(m.memberId, m.memberId, term),
    ...publishedLines(m),
  ];
}

/** From etcd's banner to its server starting: who it is, its configuration, Raft's first role. */
export function bannerLines(m: StartedMember): LogEvent[] {
  const id = hex(m.memberId);
  const cid = hex(m.clusterId);
  const term = m.restart?.term ?? 2n;
  return [
    ...(m.restart === undefined
      ? []
      : [info('etcdmain', 'the server is already initialized as member before, starting as etcd member...', 'etcdmain/etcd.go:108', 'server has already been initialized', { 'data-dir': m.dataDir, 'dir-type': 'member' }, true)]),
    info('etcdmain', `etcd Version: ${m.serverVersion}`, 'etcdmain/etcd.go:134', 'starting an etcd server', {
      'etcd-version': m.serverVersion,
      'git-sha': 'Not provided (etcdsim)',
      name: m.name,
      'data-dir': m.dataDir,
      'advertise-client-urls': m.advertiseClientUrls,
      'listen-client-urls': m.listenClientUrls,
      'initial-advertise-peer-urls': m.peerUrls,
    }),
    info('embed', `name = ${m.name}`, 'embed/etcd.go:305', 'configuring member', { name: m.name }),
    info('embed', `data dir = ${m.dataDir}`, 'embed/etcd.go:306', 'data dir', { 'data-dir': m.dataDir }),
    info('embed', `member dir = ${m.dataDir}/member`, 'embed/etcd.go:307', 'member dir', { 'member-dir': `${m.dataDir}/member` }),
    info('embed', `heartbeat = ${m.heartbeatMs}ms`, 'embed/etcd.go:308', 'heartbeat', { heartbeat: `${m.heartbeatMs}ms` }),
    info('embed', `election = ${m.electionMs}ms`, 'embed/etcd.go:309', 'election', { election: `${m.electionMs}ms` }),
    info('embed', `snapshot count = ${m.snapshotCount}`, 'embed/etcd.go:310', 'snapshot count', { 'snapshot-count': Number(m.snapshotCount) }),
    info('embed', `advertise client URLs = ${m.advertiseClientUrls.join(',')}`, 'embed/etcd.go:311', 'advertise client URLs', { 'advertise-client-urls': m.advertiseClientUrls }),
    m.restart === undefined
      ? info('etcdserver', `starting member ${id} in cluster ${cid}`, 'etcdserver/raft.go:536', 'starting local member', { 'local-member-id': id, 'cluster-id': cid })
      : info('etcdserver', `restarting member ${id} in cluster ${cid} at commit index ${m.restart.commitIndex}`, 'etcdserver/raft.go:616', 'restarting local member', {
          'cluster-id': cid,
          'local-member-id': id,
          'commit-index': Number(m.restart.commitIndex),
        }),
    raft(`${id} became follower at term ${term - 1n}`, 'raft/raft.go:706'),
    ...(m.authToken.startsWith('simple') ? [{ level: 'warn', pkg: 'auth', text: 'simple token is not cryptographically signed', caller: 'auth/store.go:1380', msg: 'simple token is not cryptographically signed' } as const] : []),
    info('etcdserver', `starting server... [version: ${m.serverVersion}, cluster version: to_be_decided]`, 'etcdserver/server.go:816', 'starting etcd server', {
      'local-member-id': id,
      'local-server-version': m.serverVersion,
      'cluster-version': 'to_be_decided',
    }),
  ];
}

/** A member added to the cluster's membership (its conf change applied). */
export function addedMemberLine(m: StartedMember, added: bigint, peerUrls: readonly string[]): LogEvent {
  const cid = hex(m.clusterId);
  return info('etcdserver/membership', `added member ${hex(added)} [${peerUrls.join(' ')}] to cluster ${cid}`, 'membership/cluster.go:392', 'added member', {
    'cluster-id': cid,
    'local-member-id': hex(m.memberId),
    'added-peer-id': hex(added),
    'added-peer-peer-urls': peerUrls,
  });
}

/** A member removed from the cluster's membership. */
export function removedMemberLine(m: StartedMember, removed: bigint): LogEvent {
  const cid = hex(m.clusterId);
  return info('etcdserver/membership', `removed member ${hex(removed)} from cluster ${cid}`, 'membership/cluster.go:422', 'removed member', {
    'cluster-id': cid,
    'local-member-id': hex(m.memberId),
    'removed-remote-peer-id': hex(removed),
  });
}

/** A member's peer URLs replaced (its UpdateNode conf change applied). */
export function updatedMemberLine(m: StartedMember, updated: bigint, peerUrls: readonly string[]): LogEvent {
  const cid = hex(m.clusterId);
  return info('etcdserver/membership', `updated member ${hex(updated)} [${peerUrls.join(' ')}] in cluster ${cid}`, 'membership/cluster.go:520', 'updated member', {
    'cluster-id': cid,
    'local-member-id': hex(m.memberId),
    'updated-remote-peer-id': hex(updated),
    'updated-remote-peer-urls': peerUrls,
  }, true);
}

/**
 * etcd's adjustTicks on a member of several: whether its first election clock is advanced
 * (--initial-election-tick-advance). zap logs it; capnslog has no such line.
 */
export function tickAdvanceLine(advance: boolean, electionTicks: number): LogEvent {
  const msg = `${advance ? 'starting' : 'skipping'} initial election tick advance`;
  return info('etcdserver', msg, advance ? 'etcdserver/server.go:704' : 'etcdserver/server.go:699', msg, { 'election-ticks': electionTicks });
}

/** The leader's snapshot installed (etcd's applySnapshot, its closing line): where the member was, what came. */
export function appliedSnapshotLine(was: { readonly snapshot: number; readonly applied: number }, incoming: { readonly index: number; readonly term: bigint }): LogEvent {
  return info('etcdserver', `finished applying incoming snapshot at index ${was.snapshot}`, 'etcdserver/server.go:1177', 'applied snapshot', {
    'current-snapshot-index': was.snapshot,
    'current-applied-index': was.applied,
    'incoming-leader-snapshot-index': incoming.index,
    'incoming-leader-snapshot-term': Number(incoming.term),
  });
}

/** Raft's role moved (`became follower|pre-candidate|candidate|leader at term N`). */
export function roleLine(id: bigint, role: string, term: bigint): LogEvent {
  return raft(`${hex(id)} became ${role} at term ${term}`, role === 'leader' ? 'raft/raft.go:771' : role === 'follower' ? 'raft/raft.go:706' : 'raft/raft.go:719');
}

/** The member learned its leader, or lost it. */
export function electedLine(id: bigint, leader: bigint, term: bigint): LogEvent {
  return leader === 0n ? raft(`raft.node: ${hex(id)} lost leader at term ${term}`, 'raft/node.go:333') : raft(`raft.node: ${hex(id)} elected leader ${hex(leader)} at term ${term}`, 'raft/node.go:327');
}

/** The member's attributes applied ("published ... to cluster"), and the cluster version set up. */
export function publishedLines(m: StartedMember): LogEvent[] {
  const cid = hex(m.clusterId);
  const cluster = m.version.replace(/^(\d+\.\d+).*/, '$1');
  return [
    info('etcdserver', `published {Name:${m.name} ClientURLs:[${m.advertiseClientUrls.join(' ')}]} to cluster ${cid}`, 'etcdserver/server.go:2069', 'published local member to cluster through raft', {
      'local-member-id': hex(m.memberId),
      'local-member-attributes': `{Name:${m.name} ClientURLs:[${m.advertiseClientUrls.join(' ')}]}`,
      'request-path': `/0/members/${hex(m.memberId)}/attributes`,
      'cluster-id': cid,
      'publish-timeout': '7s',
    }),
    info('etcdserver', `setting up the initial cluster version to ${cluster}`, 'etcdserver/server.go:2567', 'setting up initial cluster version', { 'cluster-version': cluster }),
  ];
}

/** Ready to serve, and the cluster version that enables the API's capabilities. */
export function readyLines(m: StartedMember): LogEvent[] {
  const cluster = m.version.replace(/^(\d+\.\d+).*/, '$1');
  const id = hex(m.memberId);
  const cid = hex(m.clusterId);
  const hostPorts = m.listenClientUrls.map((u) => u.replace(/^\w+:\/\//, ''));
  return [
    // 3.4's zap logger has no such line (only capnslog's); later releases log it.
    { ...info('embed', 'ready to serve client requests', 'embed/serve.go:139', 'ready to serve client requests'), capnslogOnly: m.version === '3.4' },
    ...hostPorts.map((a) =>
      m.tls
        ? info('embed', `serving client requests on ${a}`, 'embed/serve.go:191', 'serving client traffic securely', { address: a }, true)
        : info('embed', `serving insecure client requests on ${a}, this is strongly discouraged!`, 'embed/serve.go:145', 'serving client traffic insecurely; this is strongly discouraged!', { address: a }, true),
    ),
    info('etcdserver/membership', `set the initial cluster version to ${cluster}`, 'membership/cluster.go:558', 'set initial cluster version', { 'cluster-id': cid, 'local-member-id': id, 'cluster-version': cluster }, true),
    info('etcdserver/api', `enabled capabilities for version ${cluster}`, 'api/capability.go:76', 'enabled capabilities for version', { 'cluster-version': cluster }),
  ];
}

/** What etcd logs when a signal stops it. */
export function shutdownLines(m: StartedMember, signal: 'SIGINT' | 'SIGTERM'): LogEvent[] {
  const word = signal === 'SIGINT' ? 'interrupt' : 'terminated';
  const id = hex(m.memberId);
  return [
    info('pkg/osutil', `received ${word} signal, shutting down...`, 'osutil/interrupt_unix.go:64', 'received signal; shutting down', { signal: word }, true),
    info('etcdserver', 'skipped leadership transfer for single voting member cluster', 'etcdserver/server.go:1507', 'skipped leadership transfer for single voting member cluster', {
      'local-member-id': id,
      'current-leader-member-id': id,
    }),
  ];
}
