/**
 * The shadow: a proxy in front of a real etcd (proxy.ts) whose every answer is also asked of a simulator
 * following that etcd's revisions (follower.ts), the two answers compared after normalising what etcd
 * leaves free (src/diff/normalise.ts: cluster and member IDs, raft term; here also the remaining TTL of a
 * lease, which is time).
 *
 * Compared: the unary calls unary.ts and lock_election.ts have a rule for (KV, Lease, Auth, Maintenance,
 * Cluster, Lock, Election) and the Watch and LeaseKeepAlive streams (stream_calls.ts). Every other call
 * passes through and is counted as not compared; the keys it writes reach the simulator through the
 * shadow's own watch (follower.ts).
 */
import { Buffer } from 'node:buffer';
import * as grpc from '@grpc/grpc-js';
import { createEtcdSim, serverOf, type EtcdSim } from '../client/index.js';
import { connectEtcd, type EtcdGrpcClient } from '../grpc/index.js';
import type { EtcdVersion } from '../etcd/index.js';
import { ErrInvalidAuthToken, SimpleTokens, DEFAULT_TOKEN_TTL_MS } from '../auth/index.js';
import { routeAt } from '../http/index.js';
import { text, simTarget } from '../diff/index.js';
import { afterHostTime, hostNow } from '../sim/index.js';
import { TokenMap, type ShadowContext } from './context.js';
import { CompactionFollower, isCompactedError } from './compaction.js';
import { Follower } from './follower.js';
import { startProxy, type Proxy, type TappedCall, type TlsFiles } from './proxy.js';
import { ShadowReport } from './report.js';
import { ScenarioLog } from './scenario.js';
import { scenarioScript } from './script.js';
import { seedRefusal, snapshotOf } from './seed.js';
import { errorDetails, OwnAuth, type ShadowUser } from './own_auth.js';
import { keepAliveCall, watchCall } from './stream_calls.js';
import { grpcCodec, jsonCodec, type Codec } from './codecs.js';
import type { GatewayTap } from './gateway.js';
import type { StreamCompare } from './streams.js';
import { UNARY, unaryStep } from './unary.js';
import { FollowingTokens, type JwtTokensClass } from './token_kind.js';
import { WireAnswer } from './wire_answer.js';

export interface ShadowOptions {
  /** host:port of the real etcd. */
  readonly etcd: string;
  readonly host: string;
  /** 0: any free port. */
  readonly port: number;
  /** The release the simulator follows (default 3.4: the etcd in CI). */
  readonly etcdVersion?: EtcdVersion | undefined;
  /** The real etcd's --heartbeat-interval and --election-timeout (its minimum lease TTL follows from them). */
  readonly heartbeatMs?: number | undefined;
  readonly electionMs?: number | undefined;
  /** Where each divergence is written (a directory per divergence). */
  readonly divergenceDir?: string | undefined;
  /** How long revisions no answer accounts for wait for a write in flight (default 500 ms). */
  readonly graceMs?: number | undefined;
  /** The shadow's client port over TLS, as etcd's --cert-file / --key-file (/ --trusted-ca-file: client certificates required). */
  readonly tls?: TlsFiles | undefined;
  /**
   * The real etcd over TLS: its CA, and the client certificate the shadow presents (its own, for every
   * call: an application's client certificate ends at the shadow, so etcd's --client-cert-auth sees the
   * shadow's Common Name, not the application's).
   */
  readonly etcdTls?: TlsFiles | undefined;
  /** The largest etcd db the simulator takes on at the start (default DEFAULT_MAX_SEED_BYTES, 512 MiB; seed.ts). */
  readonly maxSeedBytes?: number | undefined;
  /** Called on each divergence, with the directory it was written to. */
  readonly onDivergence?: ((where: string, dir: string | undefined) => void) | undefined;
  /**
   * How often etcd is asked whether it compacted beyond the simulator (compaction.ts; default 10 000 ms of
   * host time, 0 never: then only drained() and a read etcd refused as compacted ask).
   */
  readonly compactionProbeMs?: number | undefined;
  /**
   * The shadow's own user on an etcd with auth on (own_auth.ts): its snapshot, its watch and its reads go
   * as this user, who needs the root role (etcd lets only root take a Snapshot). Without one, an etcd whose
   * auth is on refuses the shadow at the start.
   */
  readonly user?: ShadowUser | undefined;
  /**
   * The real etcd's --auth-token-ttl in ms (default 300 s): a simple token unused that long is gone from
   * etcd, and the shadow drops its simulator's counterpart (context.ts, TokenMap).
   */
  readonly authTokenTtlMs?: number | undefined;
}

/** What a shadow holds now: each is bounded, or follows what the real etcd keeps (ShadowHandle.retained). */
export interface ShadowRetained {
  /** The simulator's revisions (tombstones included) and their key and value bytes: what etcd's db keeps. */
  readonly revisions: number;
  readonly bytes: number;
  /** The simulator's compaction revision (-1: none yet). */
  readonly compactRevision: number;
  /** Steps and revisions of events waiting for the simulator to reach them. */
  readonly waitingSteps: number;
  readonly waitingEvents: number;
  /** Entries of the replayable log (bounded: scenario.ts). */
  readonly logEntries: number;
  /** Stream comparisons open. */
  readonly streams: number;
  /** Compactions found by asking etcd (not sent through the shadow). */
  readonly compactionsFound: number;
  /** Auth tokens the simulator holds (those of etcd's tokens still in use, and the shadow's own root token). */
  readonly tokens: number;
}

export interface ShadowHandle {
  /** host:port the application connects to. */
  readonly endpoint: string;
  readonly report: ShadowReport;
  readonly sim: EtcdSim;
  /** Resolves once every answer etcd gave so far is applied (or `timeoutMs` passed); true when caught up. */
  drained(timeoutMs?: number): Promise<boolean>;
  /** Stream responses the simulator sent that etcd's have not matched yet (etcd's may still be on the way). */
  unmatched(): number;
  /** What the shadow holds now: a long run against an etcd that compacts keeps it flat. */
  retained(): ShadowRetained;
  /** How often the shadow authenticated as its user: once at the start, again whenever etcd refused its token. */
  authentications(): number;
  close(): Promise<void>;
}

/** The shadow's own connection to etcd (its watch, its snapshot, its reads), with the proxy's TLS. */
function upstreamCredentials(t: TlsFiles | undefined): grpc.ChannelCredentials {
  if (t === undefined) return grpc.credentials.createInsecure();
  const pem = (v: string | Buffer | undefined): Buffer | null => (v === undefined ? null : Buffer.from(v));
  return grpc.credentials.createSsl(pem(t.ca), pem(t.key), pem(t.cert));
}

/** The real etcd's identity, which the simulator takes on: its cluster, and the member the shadow talks to. */
interface Identity {
  readonly clusterId: bigint;
  readonly memberId: bigint;
  readonly memberName: string;
  readonly clientUrls: readonly string[];
  readonly peerUrls: readonly string[];
}

async function identityOf(client: EtcdGrpcClient): Promise<Identity> {
  const r = await client.cluster.memberList({});
  const self = r.members.find((m) => m.ID === r.header.member_id);
  return {
    clusterId: BigInt(r.header.cluster_id),
    memberId: BigInt(r.header.member_id),
    memberName: self?.name ?? 'default',
    clientUrls: self?.clientURLs ?? [],
    peerUrls: self?.peerURLs ?? [],
  };
}

/**
 * A simulator of the release asked, on a clock that never moves (etcd's clock decides), holding etcd's
 * state (seed.ts), as the same member of the same cluster (so Cluster's answers name the same member).
 */
function followingSim(o: ShadowOptions, version: EtcdVersion, snapshot: Buffer, id: Identity, Jwt: JwtTokensClass): EtcdSim {
  const heartbeatMs = o.heartbeatMs ?? 100;
  const electionMs = o.electionMs ?? 1000;
  return createEtcdSim({
    time: 'virtual',
    etcdVersion: version,
    seed: 1,
    heartbeatIntervalMs: heartbeatMs,
    electionTicks: Math.max(1, Math.round(electionMs / heartbeatMs)),
    fromSnapshot: snapshot,
    // Tokens of the kind etcd issues (token_kind.ts): a JWT for an Authenticate etcd answered with one.
    authTokenProvider: (clock) => new FollowingTokens(clock, Jwt),
    ...id,
  });
}

export async function startShadow(o: ShadowOptions): Promise<ShadowHandle> {
  const version = o.etcdVersion ?? '3.4';
  const credentials = upstreamCredentials(o.etcdTls);
  const client = connectEtcd(o.etcd, { credentials });
  const auth = new OwnAuth(client, o.user);
  let sim: EtcdSim;
  try {
    const { JwtTokens } = await import('../auth/jwt_token.js');
    sim = followingSim(o, version, await seed(o, credentials, auth), await identityOf(client), JwtTokens);
  } catch (err) {
    client.close();
    throw err;
  }
  const startRev = sim.mvcc.currentRevision;
  // An etcd past its first revision has a history (kept or compacted) that a fresh etcd replaying the log would lack.
  const held = startRev > 1 || sim.lessor.leases().length > 0;
  // A read etcd refused as compacted (unary.ts) asks for the compaction; only calls through the proxy, started below, do.
  const ctx = shadowContext(o, sim, new ScenarioLog(startRev, version, undefined, held), {
    compactionSeen: () => void following.probe(),
    compactedBeyond: (rev, as) => following.refusing(rev, as),
    syncPassed: (below, as) => following.syncPassed(below, as),
    readerSeen: (r) => following.permitted(r),
  });
  const following = new CompactionFollower(client, ctx, auth, o.compactionProbeMs ?? 10_000);
  // The shadow's own watch: every revision etcd makes, for those no answer through the proxy accounts for.
  const own = client.watch.watch(await auth.options());
  own.onResponse((rs) => {
    for (const r of rs) ctx.follower.addEvents(r.events);
  });
  // Without prev_kv: an event is applied as what it did (follower.ts), and half the bytes of an update to decode.
  own.write({ create_request: { key: Buffer.from([0]), range_end: Buffer.from([0]), start_revision: String(startRev + 1) } });

  let proxy: Proxy;
  try {
    proxy = await startProxy({
      etcd: o.etcd,
      host: o.host,
      port: o.port,
      tls: o.tls,
      etcdTls: o.etcdTls,
      maxMessageBytes: 4 * 1024 * 1024,
      tap: (path, headers) => tapCall(ctx, path, headers['token'], grpcCodec(path)),
      unread: (why) => {
        ctx.report.call(UNREAD);
        ctx.report.notCompared(UNREAD, why);
      },
      tapGateway: (url, method, headers) => tapGateway(ctx, url, method, headers),
    });
  } catch (err) {
    following.close();
    own.cancel();
    client.close();
    sim.close();
    throw err;
  }
  return {
    endpoint: `${o.host}:${proxy.port}`,
    report: ctx.report,
    sim,
    async drained(timeoutMs = 5000) {
      await following.probe();
      // One read of etcd's revision marks "now": once the simulator reaches it, every earlier answer is in.
      const target = await following.currentRevision();
      for (let waited = 0; ; waited += 10) {
        ctx.follower.pump();
        if (ctx.follower.revision >= target && ctx.follower.waiting === 0) return true;
        if (waited >= timeoutMs) return false;
        await new Promise<void>((r) => afterHostTime(10, r));
      }
    },
    unmatched: () => [...ctx.streams].reduce((n, s) => n + s.unmatched(), 0),
    retained: () => ({
      revisions: sim.mvcc.retainedRevisions,
      bytes: sim.mvcc.retainedBytes,
      compactRevision: sim.mvcc.compactRevision,
      waitingSteps: ctx.follower.waiting,
      waitingEvents: ctx.follower.eventRevisions,
      logEntries: ctx.log.size,
      streams: ctx.streams.size,
      compactionsFound: following.found,
      tokens: serverOf(sim).auth.tokens.size,
    }),
    authentications: () => auth.authentications,
    async close() {
      following.close();
      await proxy.close();
      own.cancel();
      ctx.follower.close();
      client.close();
      sim.close();
    },
  };
}

/** etcd's state as the simulator's start: its snapshot, taken as the shadow's user (etcd's refusal for want of one as what to do). */
async function seed(o: ShadowOptions, credentials: grpc.ChannelCredentials, auth: OwnAuth): Promise<Buffer> {
  try {
    return await auth.call((as) => snapshotOf(o.etcd, credentials, o.maxSeedBytes, as?.token));
  } catch (err) {
    const refusal = seedRefusal(errorDetails(err), o.user?.name);
    throw refusal === undefined ? err : new Error(refusal);
  }
}

/** The report, the follower and the stream comparisons of one shadow, around its simulator. */
function shadowContext(o: ShadowOptions, sim: EtcdSim, log: ScenarioLog, compactions: Pick<ShadowContext, 'compactionSeen' | 'compactedBeyond' | 'syncPassed' | 'readerSeen'>): ShadowContext {
  const report = new ShadowReport(o.divergenceDir);
  const settle = simTarget(sim);
  const streams = new Set<StreamCompare>();
  let streamCount = 0;
  const diverge: ShadowContext['diverge'] = (rpc, where, request, etcd, etcdsim, revision) => {
    const dir = report.divergence({ rpc, where, request, etcd, etcdsim, revision, scenario: log.text(), script: scenarioScript(log.file(), where) });
    o.onDivergence?.(where, dir);
  };
  const follower = new Follower(
    sim,
    {
      onFollowError: (rev, why) => diverge('(own watch)', `applying etcd's revision ${rev}`, { revision: rev }, text(String(rev)), text(why), rev),
      afterStep: () => {
        void settle.settle([], []);
        for (const s of streams) s.compare();
      },
      onEvents: (n) => {
        report.events += n;
      },
    },
    o.graceMs ?? 500,
  );
  return {
    sim,
    report,
    log,
    follower,
    streams,
    diverge,
    leaseGone: (id) => {
      if (id === undefined || id === '0') return;
      const l = BigInt(id);
      if (sim.lessor.exists(l) && sim.lessor.keyStringsOf(l).length === 0) sim.lessor.expire(l);
    },
    nextStream: () => ++streamCount,
    tokens: new TokenMap(
      (token) => {
        const held = serverOf(sim).auth.tokens;
        if (held instanceof SimpleTokens) held.revoke(token);
      },
      o.authTokenTtlMs ?? DEFAULT_TOKEN_TTL_MS,
      hostNow,
    ),
    memberIds: new Map(),
    ...compactions,
  };
}

/**
 * An HTTP/1.1 request through the shadow: a call of etcd's JSON gateway (`/v3/...`, and `/v3beta/...`,
 * which etcd 3.4 and 3.5 serve as `/v3/`) is the gRPC call its route names, read as JSON (codecs.ts) and
 * compared as that call; the gateway's token comes in `Authorization` (or `Grpc-Metadata-Token`). Anything
 * else (/health, /metrics, a path etcd does not route) passes through, counted as HTTP.
 */
function tapGateway(ctx: ShadowContext, url: string, method: string, headers: TappedCall['headers']): GatewayTap | undefined {
  const m = /^\/v3(?:beta)?\/([^?#]*)/.exec(url);
  const route = m === null ? undefined : routeAt(m[1]!);
  if (route === undefined) {
    ctx.report.call('HTTP');
    ctx.report.notCompared('HTTP', 'not a gateway call');
    return undefined;
  }
  const path = `/${route.method.includes('.') ? '' : 'etcdserverpb.'}${route.method}`;
  if (method !== 'POST') {
    const rpc = rpcName(path);
    ctx.report.call(rpc);
    ctx.report.notCompared(rpc, 'not a POST');
    return undefined;
  }
  const responseStream = route.bidi !== undefined || route.serverStream !== undefined || route.streamCall !== undefined;
  const h = headers['grpc-metadata-token'] ?? headers['authorization'];
  const call = tapCall(ctx, path, Array.isArray(h) ? h[0] : h, jsonCodec(path, route.requestType, route.responseType, responseStream));
  return call && { call, requestStream: route.bidi !== undefined, responseStream };
}

const RANGE = '/etcdserverpb.KV/Range';
/** gRPC's OutOfRange, etcd's code for a read below its compaction. */
const COMPACTED_CODE = 11;

/** The report's row for calls on a connection the tap no longer reads: which RPC they were is not known. */
const UNREAD = '(unread)';

/** Names already worked out, per path: a few dozen of etcd's methods in practice, bounded for any client. */
const rpcNames = new Map<string, string>();

/** `KV.Range` for `/etcdserverpb.KV/Range`. */
function rpcName(path: string): string {
  let name = rpcNames.get(path);
  if (name === undefined) {
    name = path.replace(/^\/[\w.]*?\.?(\w+)\/(\w+)$/, '$1.$2');
    if (rpcNames.size < 256) rpcNames.set(path, name);
  }
  return name;
}

/** What the shadow does with one call the proxy carries: compared, or passed through and counted. */
function tapCall(ctx: ShadowContext, path: string, token: string | string[] | undefined, codec: Codec | undefined): TappedCall | undefined {
  const rpc = rpcName(path);
  const { report, follower } = ctx;
  report.call(rpc);
  if (codec === undefined) {
    report.notCompared(rpc, 'unknown method');
    return undefined;
  }
  const call = typeof token === 'string' ? { token: ctx.tokens.simToken(token) } : undefined;
  if (call !== undefined && call.token === undefined && (path === '/etcdserverpb.Watch/Watch' || path === '/etcdserverpb.Lease/LeaseKeepAlive')) {
    report.notCompared(rpc, 'a token from before the shadow');
    return undefined;
  }
  if (path === '/etcdserverpb.Watch/Watch') return watchCall(ctx, rpc, codec, call, typeof token === 'string' ? token : undefined);
  if (path === '/etcdserverpb.Lease/LeaseKeepAlive') return keepAliveCall(ctx, rpc, codec, call);
  const rule = UNARY.get(path);
  // A call that may make a revision: its answer, not etcd's events, should apply it (follower.ts).
  const writes = rule?.makesRevision !== undefined;
  let req: unknown;
  let res: unknown;
  // etcd's answer kept as its bytes, decoded only if the comparison needs it (wire_answer.ts).
  const asBytes = codec.protobuf && rule?.encode !== undefined;
  let untapped: string | undefined;
  if (writes) follower.inflightWrites++;
  let counted = writes;
  let compacting = path === '/etcdserverpb.KV/Compact';
  if (compacting) follower.compactionSent();
  return {
    path,
    headers: {},
    onRequest: (m) => {
      req = codec.req(m);
    },
    onResponse: (m) => {
      // A copy: the message is a view into the socket's chunk, which the scenario log would keep alive.
      res = asBytes ? new WireAnswer(Buffer.from(m), codec.res) : codec.res(m);
    },
    onUntapped: (why) => {
      untapped = why;
    },
    onEnd: (status, message) => {
      if (path === RANGE && typeof token === 'string' && (status === 0 || (status === COMPACTED_CODE && isCompactedError(message)))) {
        const key = (req as { key?: Buffer } | undefined)?.key;
        if (key !== undefined && key.length > 0) ctx.readerSeen({ key, token });
      }
      if (rule === undefined) report.notCompared(rpc, 'not shadowed');
      else if (untapped !== undefined) report.notCompared(rpc, untapped);
      else if (status === undefined) report.notCompared(rpc, 'canceled or reset');
      else {
        // A token etcd no longer knows (expired unused after --auth-token-ttl, dropped with auth turned off):
        // its expiry is etcd's decision, as a lease's (the simulator's clock never moves). The simulator forgets
        // it too: asked with a token it never issued, it refuses the call alike.
        const dropped = status === ErrInvalidAuthToken.code && message === ErrInvalidAuthToken.message && typeof token === 'string';
        if (dropped) ctx.tokens.forget(token);
        const asked = dropped ? { token } : call;
        if (asked !== undefined && asked.token === undefined) report.notCompared(rpc, 'a token from before the shadow');
        else follower.add(unaryStep(ctx, rule, rpc, (req ?? {}) as Record<string, unknown>, status !== 0 ? { err: { code: status, details: message } } : res instanceof WireAnswer ? res : { ok: res }, asked, codec.wire));
      }
      if (compacting) {
        compacting = false;
        follower.compactionAnswered();
      }
      if (counted) {
        counted = false;
        follower.writeEnded();
      }
    },
  };
}
