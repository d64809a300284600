/**
 * Replays a shadow divergence's scenario.json (scenario.ts) against a real etcd through a fresh shadow:
 * the same requests, in the order the simulator applied them, so the divergence shows again — on another
 * etcd, with another simulator release (`--etcd-version`), or after a fix. Unary requests are sent one at a
 * time; a stream request waits for the response it caused before the next step.
 *
 * The etcd must be empty. A scenario that started at revision R > 1 needs the etcd at R: the replay first
 * writes and deletes a padding key to get there (`R - current` must then be 0 or at least 2).
 */
import { Buffer } from 'node:buffer';
import { connectEtcd, type GrpcBidiCall } from '../grpc/index.js';
import type { EtcdVersion } from '../etcd/index.js';
import { afterHostTime } from '../sim/index.js';
import { startShadow } from './shadow.js';
import type { ShadowReport } from './report.js';
import type { ScenarioFile } from './scenario.js';

export interface ReplayResult {
  readonly report: ShadowReport;
  /** Where each divergence happened, in order. */
  readonly divergences: readonly string[];
  readonly steps: number;
}

const PAD = Buffer.from('\u0000etcdsim-replay-pad', 'latin1');

export async function replayScenario(s: ScenarioFile, etcd: string, opts: { etcdVersion?: EtcdVersion | undefined; electionMs?: number | undefined; heartbeatMs?: number | undefined } = {}): Promise<ReplayResult> {
  const direct = connectEtcd(etcd);
  try {
    const cur = Number((await direct.kv.range({ key: PAD })).header.revision);
    const gap = s.startRevision - cur;
    if (gap < 0 || gap === 1) throw new Error(`the scenario starts at revision ${s.startRevision}; this etcd is at ${cur}: use a fresh etcd`);
    for (let i = 0; i < gap - 1; i++) await direct.kv.put({ key: PAD, value: Buffer.alloc(0) });
    if (gap > 0) await direct.kv.deleteRange({ key: PAD });
  } finally {
    direct.close();
  }
  const divergences: string[] = [];
  const shadow = await startShadow({
    etcd,
    host: '127.0.0.1',
    port: 0,
    etcdVersion: opts.etcdVersion ?? (s.etcdVersion as EtcdVersion),
    electionMs: opts.electionMs,
    heartbeatMs: opts.heartbeatMs,
    onDivergence: (where) => divergences.push(where),
  });
  const c = connectEtcd(shadow.endpoint);
  const streams = new Map<number, { call: GrpcBidiCall<unknown, unknown>; seen: number; got: number }>();
  const unary: Record<string, (req: never) => Promise<unknown>> = {
    'KV.Range': c.kv.range,
    'KV.Put': c.kv.put,
    'KV.DeleteRange': c.kv.deleteRange,
    'KV.Txn': c.kv.txn,
    'KV.Compact': c.kv.compact,
    'Lease.LeaseGrant': c.lease.leaseGrant,
    'Lease.LeaseRevoke': c.lease.leaseRevoke,
    'Lease.LeaseTimeToLive': c.lease.leaseTimeToLive,
    'Lease.LeaseLeases': c.lease.leaseLeases,
  };
  try {
    for (const step of s.steps) {
      // etcd's own stream responses (a watch's events) are recorded for the script, not sent.
      if (step.stream !== undefined && !('request' in step)) continue;
      if (step.stream !== undefined) {
        let st = streams.get(step.stream);
        if (st === undefined) {
          const call = (step.rpc === 'Watch.Watch' ? c.watch.watch() : c.lease.leaseKeepAlive()) as GrpcBidiCall<unknown, unknown>;
          const entry = { call, seen: 0, got: 0 };
          call.onResponse((rs) => {
            entry.got += rs.length;
          });
          streams.set(step.stream, entry);
          st = entry;
        }
        st.call.write(step.request);
        const want = st.seen + 1;
        for (let waited = 0; st.got < want && waited < 10_000; waited += 5) await new Promise<void>((r) => afterHostTime(5, r));
        st.seen = st.got;
      } else {
        const f = unary[step.rpc];
        if (f !== undefined) await f(step.request as never).catch(() => undefined);
      }
    }
    await shadow.drained();
    // Stream responses etcd still owes: wait (bounded) until it sent what the simulator did, or diverged.
    for (let waited = 0; waited < 10_000 && shadow.unmatched() > 0 && divergences.length === 0; waited += 5) await new Promise<void>((r) => afterHostTime(5, r));
  } finally {
    c.close();
    await shadow.close();
  }
  return { report: shadow.report, divergences, steps: s.steps.length };
}
