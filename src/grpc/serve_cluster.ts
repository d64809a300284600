/**
 * A simulated etcd cluster on real ports: one client port per member (etcd's --listen-client-urls of each
 * member), each serving etcd's v3 gRPC API through serve() — the same handler table and wire path as a
 * single member — over that member's ClusterMemberServices (src/cluster). So `etcdctl --endpoints
 * a,b,c` and any client see a cluster: MemberList, each member's Status (leader, raft term and index),
 * MoveLeader, serializable reads answered by the member's own (possibly stale) state, linearizable ones
 * after ReadIndex, watches that lag as their member does, and etcd's Lock and Election services, whose
 * requests go through the member's Raft path (src/cluster/lock_election.ts).
 *
 * Time is the shared clock of the cluster (by default the wall clock, times --clock-speed): elections,
 * applies and lease expiry happen on it by themselves. The fault levers are EtcdCluster's, in-process on
 * `handle.cluster` and from outside on every member's client port under /etcdsim/cluster
 * (src/http/cluster_control.ts).
 */
import type { EtcdServer, MemberView } from '../server/index.js';
import { ClusterMemberView, EtcdCluster, type EtcdClusterOptions } from '../cluster/index.js';
import { hostMicrotask, RealClock, type Clock } from '../sim/index.js';
import { alarmUnhealthy, answerUnhealthy, createClientHttp, type ClientHttp, type HttpResponse, handleClusterControl, SERVED_CLIENT } from '../http/index.js';
import { serveMember, type ServeHandle, type ServeOptions } from './server.js';
import type { AttachedMember, PortSwitch } from './attached_member.js';

/** One member's port and identity. */
export interface ServedClusterMember {
  /** Interface to bind (default 127.0.0.1). */
  readonly host?: string | undefined;
  /** Port (0 picks a free one). */
  readonly port: number;
  /** --name (default infraN, as etcd's Procfile). */
  readonly name?: string | undefined;
  /** --initial-advertise-peer-urls: they make the member's ID (default: etcd's Procfile peer URLs). */
  readonly peerUrls?: readonly string[] | undefined;
  /** --advertise-client-urls (default: the URL the port is served on). */
  readonly clientUrls?: readonly string[] | undefined;
}

/** Options of serveCluster: the ports, the cluster's options, and what serve() takes for every port. */
export interface ServeClusterOptions
  extends Omit<EtcdClusterOptions, 'members' | 'memberConfigs' | 'clock'>,
    Pick<ServeOptions, 'allowNonLoopback' | 'tls' | 'clockSpeed' | 'grpcKeepAliveMinTimeMs'> {
  /** One entry per member. */
  readonly members: readonly ServedClusterMember[];
  /** Time source (default: the wall clock times `clockSpeed`). */
  readonly clock?: Clock | undefined;
}

/** A served cluster. */
export interface ServeClusterHandle {
  /** The cluster: its members, status and fault levers. */
  readonly cluster: EtcdCluster;
  /** Each member's port, in member order. */
  readonly ports: readonly ServeHandle[];
  /** `host:port` of each member, for `etcdctl --endpoints`. */
  readonly addresses: readonly string[];
  /** `http(s)://host:port` of each member. */
  readonly endpoints: readonly string[];
  /**
   * Resolves once every member's port follows its member: a crashed member's port refuses connections (a
   * killed etcd's does), a restarted one listens again on the same port. A crash closes the listener a
   * microtask later (before any socket is read again); a restart (EtcdCluster.restart, in-process) binds
   * again asynchronously: await this before dialing the member.
   */
  settled(): Promise<void>;
  /** Stops every port, then the cluster. Idempotent. */
  close(): Promise<void>;
}

/** Starts the ports, then the cluster (its members' client URLs are the bound ports); resolves once all accept connections. */
export async function serveCluster(opts: ServeClusterOptions): Promise<ServeClusterHandle> {
  const n = opts.members.length;
  if (n < 1) throw new RangeError('serveCluster: at least one member');
  const { members, clock: givenClock, allowNonLoopback, tls, clockSpeed, grpcKeepAliveMinTimeMs, ...clusterOpts } = opts;
  const clock: Clock = givenClock ?? new RealClock({ unref: true, speed: clockSpeed ?? 1 });

  // Every port binds first; the cluster is built once all endpoints are known, then each port gets its member.
  const endpoints = new Array<string>(n);
  let bound = 0;
  let build: ((c: EtcdCluster) => void) | undefined;
  let abort: ((err: unknown) => void) | undefined;
  const built = new Promise<EtcdCluster>((resolve, reject) => {
    build = resolve;
    abort = reject;
  });
  built.catch(() => undefined); // rejected only when a port failed: that port's error is the one thrown
  let cluster: EtcdCluster | undefined;
  const startCluster = (): void => {
    try {
      cluster = new EtcdCluster({
        ...clusterOpts,
        // --client-cert-auth goes with the TLS options, as in serve().
        clientCertAuth: tls?.clientCertAuth === true,
        members: n,
        clock,
        memberConfigs: members.map((m, i) => ({ name: m.name, peerUrls: m.peerUrls, clientUrls: m.clientUrls ?? [endpoints[i]!] })),
      });
      // Stream responses (watch events, keep-alive answers) leave at the next microtask, as a single served member's do.
      cluster.onServer((server) => server.delivery.setScheduler((flush) => hostMicrotask(flush)));
      build!(cluster);
    } catch (err) {
      abort!(err);
    }
  };
  const followers = new Array<PortFollower>(n);
  const settled = (): Promise<void> => Promise.all(followers.map((f) => f?.settled())).then(() => undefined);
  const attach =
    (i: number) =>
    async (endpoint: string, port: PortSwitch): Promise<AttachedMember> => {
      endpoints[i] = endpoint;
      if (++bound === n) startCluster();
      const c = await built;
      followers[i] = followMember(c, i, port);
      return attachedMember(c, i, settled);
    };
  const started = await Promise.allSettled(
    members.map((m, i) =>
      serveMember(
        {
          host: m.host,
          port: m.port,
          allowNonLoopback,
          tls,
          clock,
          seed: opts.seed,
          etcdVersion: opts.etcdVersion,
          maxRequestBytes: opts.maxRequestBytes,
          grpcKeepAliveMinTimeMs,
        },
        attach(i),
      ).catch((err: unknown) => {
        abort!(err);
        throw err;
      }),
    ),
  );
  const failed = started.find((r) => r.status === 'rejected');
  if (failed !== undefined) {
    await Promise.all(started.map((r) => (r.status === 'fulfilled' ? r.value.close() : undefined)));
    cluster?.close();
    if (givenClock === undefined && clock instanceof RealClock) clock.close();
    throw (failed as PromiseRejectedResult).reason;
  }
  const ports = started.map((r) => (r as PromiseFulfilledResult<ServeHandle>).value);
  const c = cluster!;
  let closing: Promise<void> | undefined;
  return {
    cluster: c,
    ports,
    addresses: ports.map((p) => p.address),
    endpoints: ports.map((p) => p.endpoint),
    settled,
    close() {
      closing ??= (async () => {
        // A restart's listen still under way must not open a port again after it closed.
        await Promise.all(followers.map((f) => f.stop()));
        await Promise.all(ports.map((p) => p.close()));
        c.close();
        if (givenClock === undefined && clock instanceof RealClock) clock.close();
      })();
      return closing;
    },
  };
}

/** Member `i` of `c` as serve() serves it: its member view over the port's link, and its client port's HTTP side. */
function attachedMember(c: EtcdCluster, i: number, settled: () => Promise<void>): AttachedMember {
  const m = c.member(i);
  const member = new ClusterMemberView(c.connect(i, { client: SERVED_CLIENT }));
  return {
    member,
    get server(): EtcdServer {
      return m.server;
    },
    http: clusterMemberHttp(c, i, () => m.server, member, settled),
  };
}

/** A member's port kept in step with the member (followMember). */
interface PortFollower {
  /** Resolves once the port's last switch is done. */
  settled(): Promise<void>;
  /** No more switches (the served cluster is closing): resolves once the last one is done. */
  stop(): Promise<void>;
}

/**
 * Keeps member `i`'s client port in step with the member, as a real member's process and port go together:
 * a crash (SIGKILL) closes the listener — new connections are refused, open ones reset, so a client's
 * balancer moves on at once — and a restart listens on the same port again. Switches run one after another.
 */
function followMember(c: EtcdCluster, i: number, port: PortSwitch): PortFollower {
  const m = c.member(i);
  let last: Promise<void> = Promise.resolve();
  let stopped = false;
  const step = (f: () => Promise<void>): void => {
    if (stopped) return;
    last = last.then(() => (stopped ? undefined : f())).catch((err: unknown) => {
      // A restarted etcd whose port was taken meanwhile fails to start; here the member runs without a port.
      process.emitWarning(`etcdsim: member ${m.name}'s client port: ${err instanceof Error ? err.message : String(err)}`);
    });
  };
  const onCrash = (): void => {
    // The listener closes at the next microtask (before the host reads any socket again), the connections a turn later.
    step(() => port.refuse());
  };
  let started = false;
  c.onServer((_server, state) => {
    if (state !== m) return;
    if (started) step(() => port.listen());
    started = true;
    // A crash clears the member's onCrash hooks: each incarnation gets its own.
    m.onCrash.add(onCrash);
  });
  return {
    settled: () => last,
    stop: () => {
      stopped = true;
      return last;
    },
  };
}

/** How long etcd's /health waits for its probe read (etcdhttp: a one-second context). */
export const HEALTH_PROBE_MS = 1000;

/**
 * etcd's checkHealth on a member of a cluster, in its order: a raised alarm, no leader, then a read through
 * Raft — `probe`, a linearizable read (etcd 3.4 sends a QGET through Raft) — answered by `healthy` when it
 * comes back (reasons as etcd's source names them; not observed here).
 */
export function clusterHealth(s: EtcdServer, query: URLSearchParams, res: HttpResponse, hasLeader: boolean, probe: () => Promise<unknown>, healthy: () => void): void {
  const unhealthy = (reason: string): void => answerUnhealthy(s, res, reason);
  const alarm = alarmUnhealthy(s, query);
  if (alarm !== undefined) return unhealthy(alarm);
  if (!hasLeader) return unhealthy('RAFT NO LEADER');
  probe().then(healthy, (err: unknown) => unhealthy(`QGET ERROR:${err instanceof Error ? err.message : String(err)}`));
}

/**
 * The HTTP side of a cluster member's client port: the control endpoint, then the member's own
 * /health, /version, /metrics and JSON gateway (over the member's cluster services, as gRPC is). /health is etcd's check on a cluster: without a leader, or when a read through
 * Raft does not come back within a second, `503 {"health":"false"}` (observed on a 3-member 3.4.23 with two
 * members stopped: at once without a leader, after 1 s while the member still believed in one).
 */
function clusterMemberHttp(c: EtcdCluster, i: number, server: () => EtcdServer, member: MemberView, settled: () => Promise<void>): ClientHttp {
  let current = server();
  let http = createClientHttp(current, () => member);
  const own = (): ClientHttp => {
    // A restart builds a new server: its HTTP side (metrics) follows.
    if (server() !== current) {
      http.close();
      current = server();
      http = createClientHttp(current, () => member);
    }
    return http;
  };
  return {
    handle(req, res) {
      const target = req.url ?? '/';
      const q = target.indexOf('?');
      const path = q < 0 ? target : target.slice(0, q);
      if (handleClusterControl(c, path, new URLSearchParams(q < 0 ? '' : target.slice(q + 1)), req, res, settled)) return;
      if (path === '/health' && req.method === 'GET') {
        const probe = (): Promise<unknown> => c.connect(i, { client: SERVED_CLIENT, deadlineMs: HEALTH_PROBE_MS }).kv.range({ key: Buffer.from('health'), limit: 1 });
        return clusterHealth(current, new URLSearchParams(q < 0 ? '' : target.slice(q + 1)), res, c.status(i).leader !== 0n, probe, () => own().handle(req, res));
      }
      own().handle(req, res);
    },
    close() {
      http.close();
    },
  };
}
