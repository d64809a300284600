/**
 * The differential engine without a real etcd: the "etcd" side is a simulator served over gRPC
 * (`serve()`), the other side the in-process simulator, so the comparator, the settling of streams, the
 * shrinker and the transcript run on any machine. Two simulators must agree on every response; a
 * divergence planted on one side must be found and shrunk to the few ops that show it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { runDiffCheck } from '../../src/diff/check.js';
import { DIFF_ELECTION_MS, DIFF_HEARTBEAT_MS } from '../../src/diff/etcd_process.js';
import type { DiffTarget } from '../../src/diff/target.js';
import { connectEtcd, type EtcdGrpcClient } from '../../src/grpc/client.js';
import { serve, type ServeHandle } from '../../src/grpc/server.js';

let served: ServeHandle | undefined;
let client: EtcdGrpcClient | undefined;

before(async () => {
  // The timing flags the differential runs give a real etcd (minimum lease TTL 15 s).
  served = await serve({ port: 0, etcdVersion: '3.4', heartbeatIntervalMs: DIFF_HEARTBEAT_MS, electionTicks: DIFF_ELECTION_MS / DIFF_HEARTBEAT_MS });
  client = connectEtcd(served.address);
});

after(async () => {
  client?.close();
  await served?.close();
});

function etcdSide(): EtcdGrpcClient {
  if (client === undefined) throw new Error('the served simulator did not start');
  return client;
}

/** A wrong DeleteRange: `deleted` counts one key too many whenever it deletes any. */
function plantDeletedOffByOne(t: DiffTarget): DiffTarget {
  return {
    ...t,
    kv: {
      ...t.kv,
      deleteRange: async (req, ctx) => {
        const r = await t.kv.deleteRange(req, ctx);
        return r.deleted === '0' ? r : { ...r, deleted: String(Number(r.deleted) + 1) };
      },
    },
  };
}

test('a simulator against a served simulator: every response agrees', { timeout: 120_000 }, async () => {
  const report = await runDiffCheck({ etcd: etcdSide(), etcdVersion: '3.4', ops: 300, seed: 7 });
  assert.equal(report.failure, undefined, report.failure?.transcript);
  assert.ok(report.runs > 1 && report.responsesCompared > report.runs, `too little compared: ${JSON.stringify(report)}`);
});

test('a planted divergence is found, shrunk to a few ops and shown in the transcript', { timeout: 120_000 }, async () => {
  const report = await runDiffCheck({ etcd: etcdSide(), etcdVersion: '3.4', ops: 1000, seed: 11, wrapSim: plantDeletedOffByOne });
  const f = report.failure;
  assert.ok(f !== undefined, 'the planted divergence was not found');
  assert.ok(f.shrinks > 0, 'the workload was not shrunk');
  // Minimal: a put and a delete that removes it (or a range delete over it).
  assert.ok(f.ops.length <= 3, `not shrunk enough (${f.ops.length} ops):\n${f.transcript}`);
  assert.match(f.ops[f.divergence.step]!.op, /^del/);
  assert.equal(f.divergence.where, 'response');
  assert.match(f.transcript, /etcdsim: .*"deleted":"2"/);
  assert.match(f.transcript, /etcd: {4}.*"deleted":"1"/);
  assert.ok(f.seed === 11 && f.path !== '', 'the failure must carry its seed and replay path');
});
