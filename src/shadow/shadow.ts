/**
 * The shadow: a proxy in front of a real etcd (proxy.ts) whose every answer is also asked of a simulator
 * following that etcd's revisions (follower.ts), the two answers compared after normalising what etcd
 * leaves free (src/diff/normalise.ts: cluster and member IDs, raft term; here also the remaining TTL of a
 * lease, which is time). Lease IDs are the real etcd's: the simulator grants each lease with the ID etcd
 * chose, as a client-chosen ID, so every later request naming it means the same lease on both.
 *
 * Compared: KV (Range, Put, DeleteRange, Txn, Compact), Lease (Grant, Revoke, TimeToLive, Leases,
 * KeepAlive) and Watch (each watch's responses: creation, events, cancels, answers to progress requests).
 * Every other call passes through and is counted as not compared; the keys it writes reach the simulator
 * through the own watch (follower.ts).
 */
import { Buffer } from 'node:buffer';
import { createEtcdSim, type EtcdSim } from '../client/create.js';
import { connectEtcd } from '../grpc/client.js';
import type { EtcdVersion } from '../mvcc/index.js';
import { etcdService, type EtcdServiceName } from '../proto/index.js';
import { toGrpcError } from '../server/errors.js';
import type * as M from '../server/messages.js';
import { canon, text, type Canon } from '../diff/normalise.js';
import { simTarget } from '../diff/target.js';
import { keyspaceEmpty } from '../diff/reset.js';
import { Follower, type Step } from './follower.js';
import { startProxy, type Proxy, type TappedCall } from './proxy.js';
import { ShadowReport } from './report.js';
import { ScenarioLog } from './scenario.js';
import { StreamCompare, watchItems } from './streams.js';

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
  /** Called on each divergence, with the directory it was written to. */
  readonly onDivergence?: ((where: string, dir: string | undefined) => void) | undefined;
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
  close(): Promise<void>;
}

type Outcome = { readonly ok: unknown } | { readonly err: { readonly code: number; readonly details: string } };

const LEASE_NOT_FOUND = 'etcdserver: requested lease not found';
const NO_LEASES: { names: Map<string, string> } = { names: new Map() };
const WRITES = new Set(['/etcdserverpb.KV/Put', '/etcdserverpb.KV/DeleteRange', '/etcdserverpb.KV/Txn', '/etcdserverpb.Lease/LeaseRevoke']);
/** Services whose calls write keys without being compared (their writes arrive as events). */
const WRITING_SERVICES = ['/v3lockpb.Lock/', '/v3electionpb.Election/'];

interface Codec {
  req(b: Buffer): unknown;
  res(b: Buffer): unknown;
}

const codecs = new Map<string, Codec | null>();
function codecOf(path: string): Codec | undefined {
  if (!codecs.has(path)) {
    const m = /^\/(?:etcdserverpb|v3lockpb|v3electionpb)\.(\w+)\/(\w+)$/.exec(path);
    let c: Codec | null = null;
    if (m !== null) {
      try {
        const def = etcdService(m[1] as EtcdServiceName).service[m[2]!];
        if (def !== undefined) c = { req: (b) => def.requestDeserialize(b), res: (b) => def.responseDeserialize(b) };
      } catch {
        c = null;
      }
    }
    codecs.set(path, c);
  }
  return codecs.get(path) ?? undefined;
}

function outcomeText(o: Outcome): string {
  return text('err' in o ? { error: { code: o.err.code, details: o.err.details } } : canon(o.ok, NO_LEASES));
}

function simOutcome(fn: () => unknown): Outcome {
  try {
    return { ok: fn() };
  } catch (err) {
    const g = toGrpcError(err);
    return { err: { code: g.code, details: g.details } };
  }
}

/** A txn answer changed keys (so it made a revision): a put, or a delete that deleted something. */
function txnWrote(r: M.TxnResponse): boolean {
  return r.responses.some((op) =>
    op.response === 'response_put' ? true : op.response === 'response_delete_range' ? op.response_delete_range.deleted !== '0' : op.response === 'response_txn' ? txnWrote(op.response_txn) : false,
  );
}

function isObj(c: Canon): c is { [k: string]: Canon } {
  return typeof c === 'object' && c !== null && !Array.isArray(c);
}

export async function startShadow(o: ShadowOptions): Promise<ShadowHandle> {
  const client = connectEtcd(o.etcd);
  let startRev: number;
  try {
    const state = await keyspaceEmpty(client);
    if (!state.empty) throw new Error(`the etcd at ${o.etcd} holds ${state.keys} keys and ${state.leases} leases: the shadow follows an etcd from an empty keyspace`);
    startRev = Number((await client.kv.range({ key: Buffer.from([0]), count_only: true })).header.revision);
  } catch (err) {
    client.close();
    throw err;
  }
  const heartbeatMs = o.heartbeatMs ?? 100;
  const electionMs = o.electionMs ?? 1000;
  const version = o.etcdVersion ?? '3.4';
  const sim = createEtcdSim({
    time: 'virtual',
    etcdVersion: version,
    version: version === '3.4' ? '3.4.23' : undefined,
    seed: 1,
    heartbeatIntervalMs: heartbeatMs,
    electionTicks: Math.max(1, Math.round(electionMs / heartbeatMs)),
  });
  sim.restore({ currentRev: startRev, compactRev: startRev, keys: [], log: [[]], logStart: startRev });
  const report = new ShadowReport(o.divergenceDir);
  const log = new ScenarioLog(startRev, version);
  const settle = simTarget(sim);
  const streams = new Set<StreamCompare>();

  const diverge = (rpc: string, where: string, request: unknown, etcd: string, etcdsim: string, revision: number | undefined): void => {
    const dir = report.divergence({ rpc, where, request, etcd, etcdsim, revision, scenario: log.text() });
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

  // The shadow's own watch: every revision etcd makes, for those no answer through the proxy accounts for.
  const own = client.watch.watch();
  own.onResponse((rs) => {
    for (const r of rs) follower.addEvents(r.events);
  });
  own.write({ create_request: { key: Buffer.from([0]), range_end: Buffer.from([0]), start_revision: String(startRev + 1), prev_kv: true } });

  /** Drops a lease the real etcd no longer has (expired there; its keys, if any, came as events). */
  const leaseGone = (id: string | undefined): void => {
    if (id === undefined || id === '0') return;
    const l = BigInt(id);
    if (sim.lessor.exists(l) && sim.lessor.keyStringsOf(l).length === 0) sim.lessor.expire(l);
  };

  const unaryStep = (path: string, rpc: string, req: unknown, etcd: Outcome): Step => {
    const s = sim.services;
    const r = req as Record<string, unknown>;
    const ok = 'ok' in etcd ? (etcd.ok as { header?: { revision?: string } } & Record<string, unknown>) : undefined;
    const rev = ok?.header?.revision === undefined ? undefined : Number(ok.header.revision);
    const notFound = 'err' in etcd && etcd.err.details === LEASE_NOT_FOUND;
    return {
      rev,
      skip: () => report.notCompared(rpc, "its revision came first from etcd's events"),
      makesRevision: () => {
        if (ok === undefined) return false;
        switch (path) {
          case '/etcdserverpb.KV/Put':
            return true;
          case '/etcdserverpb.KV/DeleteRange':
            return ok['deleted'] !== '0';
          case '/etcdserverpb.KV/Txn':
            return txnWrote(ok as unknown as M.TxnResponse);
          case '/etcdserverpb.Lease/LeaseRevoke': {
            const id = BigInt(String(r['ID'] ?? '0'));
            return sim.lessor.exists(id) && sim.lessor.keyStringsOf(id).length > 0;
          }
          default:
            return false;
        }
      },
      run: (late) => {
        const cur = sim.mvcc.currentRevision;
        let sreq = req;
        if (late && path !== '/etcdserverpb.KV/Range' && !path.startsWith('/etcdserverpb.Lease/')) {
          report.notCompared(rpc, 'answered at a revision already passed');
          log.add(rpc, req, etcd);
          return;
        }
        if (path === '/etcdserverpb.KV/Range' && late) sreq = { ...r, revision: r['revision'] === '0' || r['revision'] === undefined ? String(rev) : r['revision'] };
        if (notFound) leaseGone(String(r['lease'] ?? r['ID'] ?? '0'));
        let mine: Outcome;
        switch (path) {
          case '/etcdserverpb.KV/Range':
            mine = simOutcome(() => s.kv.range(sreq as M.RangeRequest));
            break;
          case '/etcdserverpb.KV/Put':
            mine = simOutcome(() => s.kv.put(sreq as M.PutRequest));
            break;
          case '/etcdserverpb.KV/DeleteRange':
            mine = simOutcome(() => s.kv.deleteRange(sreq as M.DeleteRangeRequest));
            break;
          case '/etcdserverpb.KV/Txn':
            mine = simOutcome(() => s.kv.txn(sreq as M.TxnRequest));
            break;
          case '/etcdserverpb.KV/Compact':
            mine = simOutcome(() => s.kv.compact(sreq as M.CompactionRequest));
            break;
          case '/etcdserverpb.Lease/LeaseGrant':
            mine = simOutcome(() => s.lease.leaseGrant(ok === undefined ? (sreq as M.LeaseGrantRequest) : { ...(sreq as M.LeaseGrantRequest), ID: String(ok['ID']) }));
            break;
          case '/etcdserverpb.Lease/LeaseRevoke':
            mine = simOutcome(() => s.lease.leaseRevoke(sreq as M.LeaseRevokeRequest));
            break;
          case '/etcdserverpb.Lease/LeaseTimeToLive':
            if (ok !== undefined && ok['TTL'] === '-1') leaseGone(String(r['ID'] ?? '0'));
            mine = simOutcome(() => s.lease.leaseTimeToLive(sreq as M.LeaseTimeToLiveRequest));
            break;
          case '/etcdserverpb.Lease/LeaseLeases': {
            const theirs = new Set(((ok?.['leases'] ?? []) as Array<{ ID: string }>).map((l) => l.ID));
            for (const id of sim.lessor.leases()) if (!theirs.has(String(id))) leaseGone(String(id));
            mine = simOutcome(() => s.lease.leaseLeases(sreq as M.LeaseLeasesRequest));
            break;
          }
          default:
            return;
        }
        // A granted lease is recorded with the ID etcd chose, so that a replay grants the same one.
        log.add(rpc, path === '/etcdserverpb.Lease/LeaseGrant' && ok !== undefined ? { ...r, ID: ok['ID'] } : req, etcd);
        let a = outcomeText(mine);
        let b = outcomeText(etcd);
        if ('ok' in mine && ok !== undefined) {
          let cm = canon(mine.ok, NO_LEASES);
          let ce = canon(ok, NO_LEASES);
          const h = isObj(cm) ? cm['header'] : undefined;
          if (late && isObj(cm) && h !== undefined && isObj(h)) cm = { ...cm, header: { ...h, revision: String(rev) } };
          if (path === '/etcdserverpb.Lease/LeaseTimeToLive') ce = ttlFree(cm, ce);
          a = text(cm);
          b = text(ce);
        }
        report.compared(rpc);
        if (a !== b) diverge(rpc, `${rpc} at revision ${rev ?? cur}`, req, b, a, rev);
      },
    };
  };

  const tap = (path: string, headers: TappedCall['headers']): TappedCall | undefined => {
    const rpc = path.replace(/^\/[\w.]*?\.?(\w+)\/(\w+)$/, '$1.$2');
    report.call(rpc);
    const codec = codecOf(path);
    if (codec === undefined) {
      report.notCompared(rpc, 'unknown method');
      return undefined;
    }
    if (path === '/etcdserverpb.Watch/Watch') return watchCall(rpc, codec);
    if (path === '/etcdserverpb.Lease/LeaseKeepAlive') return keepAliveCall(rpc, codec);
    const writes = WRITES.has(path) || WRITING_SERVICES.some((p) => path.startsWith(p));
    const compared = /^\/etcdserverpb\.(KV\/(Range|Put|DeleteRange|Txn|Compact)|Lease\/Lease(Grant|Revoke|TimeToLive|Leases))$/.test(path);
    let req: unknown;
    let res: unknown;
    let untapped: string | undefined;
    if (writes) follower.inflightWrites++;
    let counted = writes;
    const done = (): void => {
      if (counted) {
        counted = false;
        follower.writeEnded();
      }
    };
    return {
      path,
      headers,
      onRequest: (m) => {
        req = codec.req(m);
      },
      onResponse: (m) => {
        res = codec.res(m);
      },
      onUntapped: (why) => {
        untapped = why.startsWith('not decodable') ? 'not decodable' : 'message too large or compressed';
      },
      onEnd: (status, message) => {
        if (!compared) report.notCompared(rpc, 'not shadowed');
        else if (untapped !== undefined) report.notCompared(rpc, untapped);
        else if (status === undefined) report.notCompared(rpc, 'canceled or reset');
        else if (headers['token'] !== undefined || headers['authorization'] !== undefined) report.notCompared(rpc, 'made with an auth token');
        else follower.add(unaryStep(path, rpc, req ?? {}, status === 0 ? { ok: res } : { err: { code: status, details: message } }));
        done();
      },
    };
  };

  let streamCount = 0;
  const watchCall = (rpc: string, codec: Codec): TappedCall => {
    const stream = ++streamCount;
    const simCall = sim.services.watch.watch();
    const cmp = new StreamCompare(rpc, simCall, (r) => watchItems(r as M.WatchResponse), diverge, report);
    streams.add(cmp);
    const creates: unknown[] = [];
    const cancels: unknown[] = [];
    const progress: unknown[] = [];
    return {
      path: '/etcdserverpb.Watch/Watch',
      headers: {},
      onRequest: (m) => {
        const req = codec.req(m) as M.WatchRequest;
        if (req.create_request != null) creates.push(req);
        else if (req.cancel_request != null) cancels.push(req);
        else if (req.progress_request != null) progress.push(req);
      },
      onResponse: (m) => {
        const r = codec.res(m) as M.WatchResponse;
        const rev = Number(r.header?.revision ?? 0);
        const write = (req: unknown): void => {
          follower.add({ rev, makesRevision: () => false, skip: () => undefined, run: () => (log.add(rpc, req, { ok: r }, stream), simCall.write(req as M.WatchRequest)) });
        };
        if (r.created) {
          const req = creates.shift();
          if (req !== undefined) write(req);
        } else if (r.canceled && r.compact_revision === '0' && r.cancel_reason === '' && cancels.length > 0) {
          write(cancels.shift());
        } else if (!r.canceled && r.events.length === 0) {
          const req = progress.shift();
          if (req === undefined) {
            report.notCompared(rpc, 'progress notification (etcd\'s timer)');
            return;
          }
          write(req);
        }
        report.events += r.events.length;
        cmp.etcd(r);
        follower.pump();
      },
      onUntapped: () => cmp.stop('message too large or compressed'),
      onEnd: () => {
        follower.add({ rev: undefined, makesRevision: () => false, skip: () => undefined, run: () => {
          cmp.compare();
          streams.delete(cmp);
          simCall.cancel();
        } });
      },
    };
  };

  const keepAliveCall = (rpc: string, codec: Codec): TappedCall => {
    const stream = ++streamCount;
    const simCall = sim.services.lease.leaseKeepAlive();
    const cmp = new StreamCompare(rpc, simCall, (r) => [{ key: String((r as M.LeaseKeepAliveResponse).ID), item: text(canon(r, NO_LEASES)) }], diverge, report);
    streams.add(cmp);
    return {
      path: '/etcdserverpb.Lease/LeaseKeepAlive',
      headers: {},
      onRequest: (m) => void codec.req(m),
      onResponse: (m) => {
        const r = codec.res(m) as M.LeaseKeepAliveResponse;
        const rev = Number(r.header?.revision ?? 0);
        follower.add({
          rev,
          makesRevision: () => false,
          skip: () => undefined,
          run: () => {
            if (r.TTL === '0') leaseGone(r.ID);
            log.add(rpc, { ID: r.ID }, { ok: r }, stream);
            cmp.etcd(r);
            simCall.write({ ID: r.ID });
          },
        });
      },
      onUntapped: () => cmp.stop('message too large or compressed'),
      onEnd: () => {
        follower.add({ rev: undefined, makesRevision: () => false, skip: () => undefined, run: () => {
          streams.delete(cmp);
          simCall.cancel();
        } });
      },
    };
  };

  let proxy: Proxy;
  try {
    proxy = await startProxy({ etcd: o.etcd, host: o.host, port: o.port, maxMessageBytes: 4 * 1024 * 1024, tap });
  } catch (err) {
    own.cancel();
    client.close();
    sim.close();
    throw err;
  }

  return {
    endpoint: `${o.host}:${proxy.port}`,
    report,
    sim,
    async drained(timeoutMs = 5000) {
      // One write through etcd marks "now": once the simulator reaches its revision, every earlier answer is in.
      const target = Number((await client.kv.range({ key: Buffer.from([0]), count_only: true })).header.revision);
      for (let waited = 0; ; waited += 10) {
        follower.pump();
        if (follower.revision >= target && follower.waiting === 0) return true;
        if (waited >= timeoutMs) return false;
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    unmatched: () => [...streams].reduce((n, s) => n + s.unmatched(), 0),
    async close() {
      await proxy.close();
      own.cancel();
      follower.close();
      client.close();
      sim.close();
    },
  };
}

/** LeaseTimeToLive's remaining TTL is time, which the simulator does not follow: any TTL from 0 to the granted one agrees. */
function ttlFree(sim: Canon, etcd: Canon): Canon {
  if (!isObj(sim) || !isObj(etcd)) return etcd;
  const ttl = Number(etcd['TTL']);
  const granted = Number(etcd['grantedTTL']);
  if (ttl >= 0 && ttl <= granted && Number(sim['TTL']) > 0) return { ...etcd, TTL: sim['TTL'] ?? null };
  return etcd;
}
