/**
 * Clients through the shadow in front of a real etcd 3.4.23, with no divergence: the etcd3 npm client (KV,
 * txn, watch, leases with keep-alive, a lock and an election, which it builds from txns), and the
 * differential's random KV / Watch / Lease workloads (src/diff/arbitraries.ts) run through the shadow as
 * if it were the etcd — every answer the shadow passed on also answered alike by its simulator.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { Buffer } from 'node:buffer';
import fc from 'fast-check';
import { Etcd3 } from 'etcd3';
import { connectEtcd, type EtcdGrpcClient } from '../../src/grpc/client.js';
import type * as M from '../../src/server/messages.js';
import { workloadArb } from '../../src/diff/arbitraries.js';
import { runWorkload } from '../../src/diff/engine.js';
import { resetEtcd, simAt } from '../../src/diff/reset.js';
import { etcdTarget, simTarget } from '../../src/diff/target.js';
import { DIFF_ELECTION_MS } from '../../src/diff/etcd_process.js';
import { requireCommands } from '../support/prerequisites.js';
import { CLIENT_PREFACE, Flags, frame, FrameType, settingsFrame } from '../../src/h2/frames.js';
import { HpackEncoder } from '../../src/h2/hpack.js';
import { startRig, summary, type ShadowRig } from './helpers.js';

const skip = requireCommands(['etcd']);
let rig: ShadowRig;
before(async () => {
  if (skip === false) rig = await startRig({ electionMs: DIFF_ELECTION_MS, divergenceDir: process.env['ETCDSIM_SHADOW_DIVERGENCES'] });
});
after(async () => {
  await rig?.close();
});

test('the etcd3 client through the shadow: KV, txn, watch, leases, lock and election agree', { skip }, async () => {
  const client = new Etcd3({ hosts: `http://${rig.shadow.endpoint}` });
  try {
    await client.put('/app/a').value('1');
    await client.put('/app/b').value('2');
    assert.deepEqual(await client.getAll().prefix('/app/').strings(), { '/app/a': '1', '/app/b': '2' });
    const watcher = await client.watch().prefix('/app/').withPreviousKV().create();
    const seen: string[] = [];
    watcher.on('put', (kv) => seen.push(`put ${kv.key.toString()}=${kv.value.toString()}`));
    watcher.on('delete', (kv) => seen.push(`delete ${kv.key.toString()}`));
    const t = await client.if('/app/a', 'Value', '==', '1').then(client.put('/app/a').value('10')).else(client.get('/app/b')).commit();
    assert.equal(t.succeeded, true);
    await client.delete().key('/app/b');
    const lease = client.lease(20);
    await lease.put('/app/leased').value('x');
    await lease.keepaliveOnce();
    assert.ok((await client.get('/app/leased').string()) === 'x');
    const lock = client.lock('/locks/one');
    await lock.acquire();
    await lock.release();
    const election = client.election('/elections/one');
    const campaign = election.campaign('me');
    await new Promise<void>((resolve, reject) => {
      campaign.on('elected', () => resolve());
      campaign.on('error', reject);
    });
    assert.equal(await election.leader(), 'me');
    await campaign.resign();
    await lease.revoke();
    for (let i = 0; i < 6000 && seen.length < 4; i++) await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(seen.slice(0, 4), ['put /app/a=10', 'delete /app/b', 'put /app/leased=x', 'delete /app/leased']);
    await watcher.cancel();
  } finally {
    client.close();
  }
  assert.equal(await rig.shadow.drained(), true);
  assert.equal(rig.shadow.report.divergences, 0, summary(rig));
  for (const rpc of ['KV.Txn', 'KV.Range', 'Watch.Watch', 'Lease.LeaseKeepAlive', 'Lease.LeaseRevoke']) {
    assert.ok((rig.shadow.report.rpcs.get(rpc)?.compared ?? 0) > 0, `${rpc} compared\n${summary(rig)}`);
  }
});

/**
 * 12 workloads in CI; a long run behind ETCDSIM_SHADOW_RUNS (and another seed with ETCDSIM_SHADOW_SEED), which
 * also prints the shadow's resident set before and after: its log, stream comparisons and reports are bounded.
 * ETCDSIM_SHADOW_DIVERGENCES=DIR writes each divergence there (both answers, the replayable scenario).
 */
const RUNS = Number(process.env['ETCDSIM_SHADOW_RUNS'] ?? 12);
const SEED = Number(process.env['ETCDSIM_SHADOW_SEED'] ?? 34);

test('random KV / Watch / Lease workloads through the shadow: no divergence', { skip, timeout: Math.max(120_000, RUNS * 10_000) }, async () => {
  const seed = SEED;
  const before = rig.shadow.report.divergences;
  const rss0 = process.memoryUsage().rss;
  const workloads = fc.sample(workloadArb({ maxOps: 40 }), { seed, numRuns: RUNS });
  const c: EtcdGrpcClient = connectEtcd(rig.shadow.endpoint);
  let ops = 0;
  try {
    for (const [i, workload] of workloads.entries()) {
      const rev = await resetEtcd(c);
      const sim = simAt(rev, { etcdVersion: '3.4' });
      try {
        const r = await runWorkload(workload, simTarget(sim), etcdTarget(c), { current: () => sim.mvcc.currentRevision, compacted: () => sim.mvcc.compactRevision });
        ops += r.ops;
      } finally {
        sim.server.close();
      }
      assert.equal(await rig.shadow.drained(), true);
      assert.equal(rig.shadow.report.divergences, before, `workload ${i} of seed ${seed} (ETCDSIM_SHADOW_SEED=${seed}; fc.sample(workloadArb({ maxOps: 40 }), { seed: ${seed}, numRuns: ${RUNS} })[${i}]):\n${JSON.stringify(workload)}\n${summary(rig)}`);
    }
  } finally {
    c.close();
  }
  if (RUNS !== 12) console.log(`${RUNS} workloads of seed ${seed}, ${ops} ops: resident set ${(rss0 / 2 ** 20).toFixed(1)} MiB before, ${(process.memoryUsage().rss / 2 ** 20).toFixed(1)} MiB after`);
  assert.ok(ops > 100, `ran ${ops} ops`);
});

/**
 * etcd answers no cancel that names no watch of the stream, and answers a progress request with watch ID -1
 * (a watch's own progress timer names the watch): a long shadow run (seed 7) paired a later cancel's answer
 * with an earlier cancel of a watch not yet created, and the simulator cancelled the wrong watch.
 */
test('a watch stream through the shadow: a cancel of no watch goes unanswered, later cancels still match theirs', { skip }, async () => {
  const before = rig.shadow.report.divergences;
  const compared = rig.shadow.report.rpcs.get('Watch.Watch')?.compared ?? 0;
  const c = connectEtcd(rig.shadow.endpoint);
  const w = c.watch.watch();
  const got: M.WatchResponse[] = [];
  const waitFor = async (n: number): Promise<void> => {
    for (let i = 0; i < 2000 && got.length < n; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(got.length, n, JSON.stringify(got));
  };
  w.onResponse((rs) => got.push(...rs));
  try {
    const create = (key: string): M.WatchRequest => ({ create_request: { key: Buffer.from(key), range_end: Buffer.alloc(0), start_revision: '0', progress_notify: false, prev_kv: false, watch_id: '0', fragment: false, filters: [] } });
    w.write({ cancel_request: { watch_id: '1' } });
    w.write(create('/cancels/a'));
    w.write(create('/cancels/b'));
    await waitFor(2);
    w.write({ cancel_request: { watch_id: '0' } });
    w.write({ progress_request: {} });
    await waitFor(4);
    await c.kv.put({ key: Buffer.from('/cancels/a'), value: Buffer.from('1') });
    await c.kv.put({ key: Buffer.from('/cancels/b'), value: Buffer.from('2') });
    await waitFor(5);
    assert.deepEqual(
      got.map((r) => [r.watch_id, r.created, r.canceled, r.events.map((e) => e.kv?.key.toString())]),
      [['0', true, false, []], ['1', true, false, []], ['0', false, true, []], ['-1', false, false, []], ['1', false, false, ['/cancels/b']]],
    );
  } finally {
    w.cancel();
    c.close();
  }
  assert.equal(await rig.shadow.drained(), true);
  assert.equal(rig.shadow.report.divergences, before, summary(rig));
  assert.ok((rig.shadow.report.rpcs.get('Watch.Watch')?.compared ?? 0) >= compared + 5, summary(rig));
});

test('bytes that are no protobuf message: etcd answers them through the shadow, which survives and goes on comparing', { skip }, async () => {
  const session = http2.connect(`http://${rig.shadow.endpoint}`);
  try {
    const body = Buffer.from([0, 0, 0, 0, 3, 0x0a, 0xff, 0xff]); // field 1 (key) claims 255+ bytes, has 2
    const status = await new Promise<string>((resolve, reject) => {
      const st = session.request({ ':method': 'POST', ':path': '/etcdserverpb.KV/Range', 'content-type': 'application/grpc', te: 'trailers' });
      let code = '';
      st.on('response', (h) => (code = String(h['grpc-status'] ?? code)));
      st.on('trailers', (t) => (code = String(t['grpc-status'] ?? code)));
      st.on('close', () => resolve(code));
      st.on('error', reject);
      st.resume();
      st.end(body);
    });
    assert.notEqual(status, '0', 'etcd refuses the message');
  } finally {
    session.close();
  }
  const c = connectEtcd(rig.shadow.endpoint);
  try {
    await c.kv.put({ key: Buffer.from('/after-garbage'), value: Buffer.from('1') });
  } finally {
    c.close();
  }
  assert.equal(await rig.shadow.drained(), true);
  assert.equal(rig.shadow.report.divergences, 0, summary(rig));
  assert.equal(rig.shadow.report.rpcs.get('KV.Range')?.notCompared.get('not decodable'), 1, summary(rig));
});

/**
 * A client whose header block does not decode, with two more calls in the same write: etcd ends the
 * connection (COMPRESSION_ERROR), the tap stops at the same block — and all three calls the client sent
 * through the shadow are counted, as not compared and why, though which RPC they were is not known.
 */
test('calls on a connection the tap gave up on are counted as not compared, with the reason', { skip }, async () => {
  const enc = new HpackEncoder();
  const call = (id: number): Buffer[] => [
    frame(FrameType.HEADERS, Flags.END_HEADERS, id, enc.encode([':method', 'POST', ':scheme', 'http', ':path', '/etcdserverpb.KV/Range', ':authority', 'etcd', 'content-type', 'application/grpc', 'te', 'trailers'])),
    frame(FrameType.DATA, Flags.END_STREAM, id, Buffer.from([0, 0, 0, 0, 3, 0x0a, 0x01, 0x61])),
  ];
  const bytes = Buffer.concat([CLIENT_PREFACE, settingsFrame([]), frame(FrameType.HEADERS, Flags.END_HEADERS, 1, Buffer.from([0xff, 0x20])), ...call(3), ...call(5)]);
  const [host, port] = rig.shadow.endpoint.split(':') as [string, string];
  const requests = (): number => [...rig.shadow.report.rpcs.values()].reduce((n, c) => n + c.calls, 0);
  const before = requests();
  await new Promise<void>((resolve) => {
    const socket = net.connect({ host, port: Number(port) }, () => socket.write(bytes));
    socket.resume();
    socket.on('error', () => {});
    socket.on('close', () => resolve());
  });
  const unread = rig.shadow.report.rpcs.get('(unread)');
  assert.equal(unread?.calls, 3, summary(rig));
  assert.deepEqual([...unread.notCompared], [['connection no longer read: a header block that does not decode', 3]]);
  assert.equal(requests(), before + 3);
  assert.match(rig.shadow.report.summary().join('\n'), /^\(unread\) +3 +0 +0 +3 connection no longer read: a header block that does not decode$/m);
});
