import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdCluster, type EtcdClusterOptions } from '../../src/cluster/index.js';
import type { messages as M } from '../../src/index.js';
import { VirtualClock } from '../../src/sim/index.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
const B = (s: string): Uint8Array => enc.encode(s);

function newCluster(opts: EtcdClusterOptions = {}): EtcdCluster {
  return new EtcdCluster({ clock: new VirtualClock(), seed: 7, ...opts });
}

/** The value of `key` in a range response, or undefined. */
function valueOf(r: M.RangeResponse): string | undefined {
  const kv = r.kvs[0];
  return kv === undefined ? undefined : dec.decode(kv.value);
}

/** Settles a promise into a plain result, so a test can assert on a rejection after moving time. */
function outcome<T>(p: Promise<T>): { done: boolean; value?: T; error?: { code: number; details: string } } {
  const o: { done: boolean; value?: T; error?: { code: number; details: string } } = { done: false };
  p.then(
    (v) => {
      o.done = true;
      o.value = v;
    },
    (e: { code: number; details: string }) => {
      o.done = true;
      o.error = { code: e.code, details: e.details };
    },
  );
  return o;
}

test('a fresh 3-member cluster: member 0 leads at term 2, raft index 8, IDs as etcd derives them', async () => {
  // Flags of a real 3-member etcd 3.4.23 run on loopback; it reported these IDs, term 2 and raft index 8.
  const c = newCluster({
    initialClusterToken: 'tok18',
    memberConfigs: [1, 2, 3].map((i) => ({ name: `m${i}`, clientUrls: [`http://127.0.0.1:4579${i}`], peerUrls: [`http://127.0.0.1:4580${i}`] })),
  });
  assert.equal(c.clusterId, 6320877758866448640n);
  assert.deepEqual(
    c.members.map((m) => m.id),
    [8145789916957050999n, 8298426048854033885n, 15372154282260499486n],
  );
  const list = await c.member(1).services.cluster.memberList();
  assert.deepEqual(list.header, { cluster_id: '6320877758866448640', member_id: '8298426048854033885', revision: '0', raft_term: '2' });
  assert.deepEqual(
    list.members.map((m) => [m.name, m.ID, m.clientURLs]),
    [
      ['m1', '8145789916957050999', ['http://127.0.0.1:45791']],
      ['m2', '8298426048854033885', ['http://127.0.0.1:45792']],
      ['m3', '15372154282260499486', ['http://127.0.0.1:45793']],
    ],
  );
  for (const i of [0, 1, 2]) {
    const s = await c.member(i).services.maintenance.status();
    assert.equal(s.leader, '8145789916957050999');
    assert.equal(s.raftTerm, '2');
    assert.equal(s.raftIndex, '8');
    assert.equal(s.raftAppliedIndex, '8');
    assert.deepEqual(s.errors, []);
    assert.equal(s.header.member_id, String(c.members[i]!.id));
  }
  const put = await c.member(2).services.kv.put({ key: B('a'), value: B('1') });
  assert.deepEqual(put.header, { cluster_id: '6320877758866448640', member_id: '15372154282260499486', revision: '2', raft_term: '2' });
  assert.equal((await c.member(0).services.maintenance.status()).raftIndex, '9');
  c.close();
});

test('a lagging follower serves a stale serializable read; a linearizable read there waits for its apply', async () => {
  const c = newCluster({ applyLagMs: [0, 0, 300] });
  const leader = c.member(0).services;
  const follower = c.member(2).services;
  await leader.kv.put({ key: B('k'), value: B('v1') });
  await c.advance(300);
  await leader.kv.put({ key: B('k'), value: B('v2') });
  // The follower holds the entry but applies it 300 ms after commit.
  const stale = await follower.kv.range({ key: B('k'), serializable: true });
  assert.equal(valueOf(stale), 'v1');
  assert.equal(stale.header.revision, '2');
  const lin = outcome(follower.kv.range({ key: B('k') }));
  await c.advance(299);
  assert.equal(lin.done, false, 'ReadIndex waits until the member applied up to the leader commit index');
  await c.advance(1);
  assert.equal(lin.done, true);
  assert.equal(valueOf(lin.value!), 'v2');
  assert.equal(lin.value!.header.revision, '3');
  assert.equal(lin.value!.header.member_id, String(c.members[2]!.id));
  const st = c.status(2);
  assert.equal(st.raftIndex, st.raftAppliedIndex);
  await leader.kv.put({ key: B('k'), value: B('v3') });
  const lagging = await follower.maintenance.status();
  assert.equal(Number(lagging.raftIndex), Number(lagging.raftAppliedIndex) + 1, 'Status: committed, not yet applied');
  c.close();
});

test('a write through a lagging follower is answered when that follower applied it, with its revision', async () => {
  const c = newCluster({ applyLagMs: [0, 0, 300] });
  const w = outcome(c.member(2).services.kv.put({ key: B('k'), value: B('v') }));
  await c.advance(0);
  // Committed and applied on the leader at once ...
  assert.equal(valueOf(await c.member(0).services.kv.range({ key: B('k'), serializable: true })), 'v');
  await c.advance(299);
  assert.equal(w.done, false, '... answered by member 2 only once it applied the entry (etcd\'s wait registry)');
  await c.advance(1);
  assert.equal(w.value!.header.member_id, String(c.members[2]!.id));
  assert.equal(w.value!.header.revision, '2');
  c.setApplyLag(2, 0);
  const now = await c.member(2).services.kv.put({ key: B('k'), value: B('w') });
  assert.equal(now.header.revision, '3');
  c.close();
});

test('an isolated follower answers serializable reads from its old state; linearizable reads time out', async () => {
  const c = newCluster();
  await c.member(0).services.kv.put({ key: B('k'), value: B('old') });
  c.isolate(2);
  await c.member(0).services.kv.put({ key: B('k'), value: B('new') });
  assert.equal(valueOf(await c.member(2).services.kv.range({ key: B('k'), serializable: true })), 'old');
  const lin = outcome(c.member(2).services.kv.range({ key: B('k') }));
  await c.advance(c.requestTimeoutMs);
  assert.deepEqual(lin.error, { code: 14, details: 'etcdserver: request timed out' });
  c.heal();
  // Without pre-vote the member campaigned alone and raised its term: rejoining forces an election first.
  await c.advance(3000);
  assert.ok(c.leader !== undefined);
  assert.equal(valueOf(await c.member(2).services.kv.range({ key: B('k') })), 'new');
  c.close();
});

test('a paused member answers nothing until resumed, then catches up', async () => {
  const c = newCluster();
  c.pause(1);
  await c.member(0).services.kv.put({ key: B('k'), value: B('1') });
  const r = outcome(c.member(1).services.kv.range({ key: B('k'), serializable: true }));
  await c.advance(500);
  assert.equal(r.done, false);
  c.resume(1);
  await c.advance(0);
  assert.equal(valueOf(r.value!), '1', 'on resume the leader catches it up before it serves the held read');
  c.close();
});

test('a watch on a lagging follower receives the events late, in order, with its own headers', async () => {
  const c = newCluster({ applyLagMs: [0, 250, 0] });
  const call = c.member(1).services.watch();
  call.write({ request_union: 'create_request', create_request: { key: B('w'), range_end: B('x') } });
  assert.equal(call.take()[0]!.created, true);
  for (let i = 1; i <= 3; i++) {
    await c.member(0).services.kv.put({ key: B(`w${i}`), value: B(String(i)) });
    await c.advance(50);
  }
  assert.deepEqual(call.take(), [], 'nothing yet: the follower applies 250 ms after commit');
  await c.advance(100); // t = 250: the first entry applies
  const first = call.take();
  assert.deepEqual(
    first.map((r) => [r.header.revision, r.events.map((e) => dec.decode(e.kv!.key))]),
    [['2', ['w1']]],
  );
  assert.equal(first[0]!.header.member_id, String(c.members[1]!.id));
  await c.advance(100);
  assert.deepEqual(
    call.take().map((r) => [r.header.revision, r.events.map((e) => dec.decode(e.kv!.key))]),
    [
      ['3', ['w2']],
      ['4', ['w3']],
    ],
  );
  // A progress request on the follower reports its own revision.
  await c.member(0).services.kv.put({ key: B('z'), value: B('-') });
  call.write({ request_union: 'progress_request', progress_request: {} });
  assert.equal(call.take()[0]!.header.revision, '4', 'the follower has not applied revision 5 yet');
  c.close();
});

test('leader crash: a new leader after the election timeout, writes go on, the old leader rejoins as follower', async () => {
  const c = newCluster();
  await c.member(0).services.kv.put({ key: B('a'), value: B('1') });
  c.crash(0);
  assert.equal(c.leader?.index, undefined);
  // Member 1 still follows the dead leader: it forwards the proposal there and it is lost.
  const during = outcome(c.member(1).services.kv.put({ key: B('lost'), value: B('-') }));
  await c.advance(c.electionTimeoutMs - 100);
  assert.equal(c.leader?.index, undefined, 'no election before the election timeout');
  await c.advance(c.electionTimeoutMs + 100);
  const l = c.leader;
  assert.ok(l !== undefined && l.index !== 0);
  assert.equal(l.term, 3n);
  const after = await c.member(1).services.kv.put({ key: B('b'), value: B('2') });
  assert.equal(after.header.revision, '3');
  assert.equal(after.header.raft_term, '3');
  await c.advance(c.requestTimeoutMs);
  // At the request timeout member 1 knows a leader it reaches: etcd's plain ErrTimeout.
  assert.deepEqual(during.error, { code: 14, details: 'etcdserver: request timed out' });
  c.restart(0);
  await c.advance(100);
  const st = await c.member(0).services.maintenance.status();
  assert.equal(st.leader, String(l.id));
  assert.equal(st.raftTerm, '3');
  assert.equal(valueOf(await c.member(0).services.kv.range({ key: B('b'), serializable: true })), '2');
  c.close();
});

test('a write without quorum fails with etcd errors and changes nothing', async () => {
  const c = newCluster();
  await c.member(0).services.kv.put({ key: B('k'), value: B('before') });
  c.isolate(0); // the leader alone: it keeps leading until CheckQuorum, but nothing commits
  const onOldLeader = outcome(c.member(0).services.kv.put({ key: B('k'), value: B('lost') }));
  await c.advance(c.requestTimeoutMs);
  // By then the isolated leader stepped down (CheckQuorum) and knows no leader: ErrTimeout (observed on 3.4.23).
  assert.deepEqual(onOldLeader.error, { code: 14, details: 'etcdserver: request timed out' });
  assert.equal(c.status(0).leader, 0n);
  const s0 = await c.member(0).services.maintenance.status();
  assert.deepEqual(s0.errors, ['etcdserver: no leader']);
  assert.equal(s0.leader, '0');
  // Meanwhile the majority elected a leader and moved on.
  assert.ok(c.leader !== undefined && c.leader.index !== 0);
  // A minority member without a leader holds a proposal until its deadline: Unknown, the bare context error.
  const onMinority = outcome(c.member(0).services.kv.put({ key: B('k'), value: B('also lost') }));
  await c.advance(c.requestTimeoutMs);
  assert.deepEqual(onMinority.error, { code: 2, details: 'context deadline exceeded' });
  c.heal();
  await c.advance(3000);
  assert.ok(c.leader !== undefined);
  for (const i of [0, 1, 2]) {
    const r = await c.member(i).services.kv.range({ key: B('k'), serializable: true });
    assert.equal(valueOf(r), 'before', `member ${i}`);
    assert.equal(r.header.revision, '2');
  }
  c.close();
});

test('pre-vote: an isolated member does not raise the term; without it, it does and disrupts on rejoin', async () => {
  for (const preVote of [false, true]) {
    const c = newCluster({ preVote });
    c.isolate(2);
    await c.advance(10_000);
    assert.equal(c.leader?.index, 0);
    if (preVote) assert.equal(c.members[2]!.term, 2n);
    else assert.ok(c.members[2]!.term > 5n, `term ${c.members[2]!.term}`);
    c.heal();
    await c.advance(3000);
    const l = c.leader!;
    assert.ok(l !== undefined);
    if (preVote) assert.equal(l.term, 2n, 'the leader kept leading');
    else assert.ok(l.term > 5n, 'the rejoining member forced an election at its higher term');
    await c.member(2).services.kv.put({ key: B('k'), value: B('v') });
    c.close();
  }
});

test('a lease survives a leader change, extended by the election timeout, and expires only on the leader', async () => {
  const c = newCluster();
  const g = await c.member(1).services.lease.leaseGrant({ TTL: '5' });
  const id = BigInt(g.ID);
  assert.ok(id > 0n);
  assert.equal(g.header.member_id, String(c.members[1]!.id));
  await c.member(0).services.kv.put({ key: B('leased'), value: B('x'), lease: g.ID });
  for (const m of c.members) assert.ok(m.server.lessor.exists(id), 'every member granted the same ID');
  assert.equal(c.members[1]!.server.lessor.expiryOf(id), Infinity, 'a follower never expires a lease');
  await c.advance(3000);
  const ttl = await c.member(2).services.lease.leaseTimeToLive({ ID: g.ID });
  assert.equal(ttl.TTL, '2', 'TimeToLive is the leader\'s answer: 2 s left after 3 s of 5');
  // MoveLeader to member 2: its lessor is promoted, every expiry = now + election timeout + TTL.
  const moved = await c.member(0).services.maintenance.moveLeader({ targetID: String(c.members[2]!.id) });
  assert.equal(moved.header, null, 'etcd answers a done transfer with an empty response');
  assert.equal(c.leader?.index, 2);
  assert.equal(c.members[2]!.server.lessor.expiryOf(id), 3000 + c.electionTimeoutMs + 5000);
  assert.equal(c.members[0]!.server.lessor.expiryOf(id), Infinity, 'the old leader was demoted');
  await c.advance(5500); // t = 8500: past the original expiry, before the extended one
  for (const m of c.members) assert.ok(m.server.lessor.exists(id));
  await c.advance(1000); // t = 9500: the new leader's lessor expired it and its revoke applied everywhere
  for (const m of c.members) {
    assert.equal(m.server.lessor.exists(id), false);
    assert.equal((await c.connect(m).kv.range({ key: B('leased'), serializable: true })).count, '0');
  }
  c.close();
});

test('lease checkpoints go through the log: a new leader starts from the checkpointed remaining TTL', async () => {
  const c = newCluster({ leaseCheckpoint: true, leaseCheckpointIntervalMs: 2000 });
  const g = await c.member(0).services.lease.leaseGrant({ TTL: '20' });
  const id = BigInt(g.ID);
  await c.advance(5000); // checkpoints at 2 s and 4 s (remaining 18 s, then 16 s) on every member
  for (const m of c.members) assert.equal(m.server.lessor.checkpointedTTLOf(id), 16, m.name);
  c.moveLeader(1);
  // etcd's Promote: now + election timeout + the checkpointed remaining TTL (not the full 20 s).
  assert.equal(c.members[1]!.server.lessor.expiryOf(id), 5000 + c.electionTimeoutMs + 16_000);
  c.close();
});

test('a keep-alive stream on a follower renews on the leader, survives a leader change, fails without a leader', async () => {
  const c = newCluster();
  const g = await c.member(0).services.lease.leaseGrant({ TTL: '3' });
  const ka = c.member(2).services.lease.leaseKeepAlive();
  for (let t = 1; t <= 10; t++) {
    await c.advance(1000);
    if (t === 5) await c.member(0).services.maintenance.moveLeader({ targetID: String(c.members[1]!.id) });
    ka.write({ ID: g.ID });
  }
  const rs = ka.take();
  assert.equal(rs.length, 10);
  assert.ok(rs.every((r) => r.TTL === '3' && r.header.member_id === String(c.members[2]!.id)));
  assert.equal(rs[9]!.header.raft_term, '3');
  assert.ok(c.members[1]!.server.lessor.exists(BigInt(g.ID)));
  assert.equal(c.members[1]!.server.lessor.expiryOf(BigInt(g.ID)), 10_000 + 3000, 'renewed on the new leader');
  // Cut member 2 off: its renewals wait for a leader, and after the request timeout the stream fails.
  c.isolate(2);
  await c.advance(c.electionTimeoutMs * 2);
  let ended: unknown;
  ka.onEnd((err) => {
    ended = err;
  });
  ka.write({ ID: g.ID });
  await c.advance(c.requestTimeoutMs);
  assert.equal((ended as { details: string }).details, 'etcdserver: no leader');
  c.close();
});

test('crash and restart: the member rebuilds its store from its backend and catches up', async () => {
  const c = newCluster();
  const s = c.member(0).services;
  await s.kv.put({ key: B('a'), value: B('1') });
  const g = await s.lease.leaseGrant({ TTL: '100' });
  await s.kv.put({ key: B('b'), value: B('2'), lease: g.ID });
  c.crash(1);
  await assert.rejects(c.member(1).services.kv.range({ key: B('a') }), (e: { code: number }) => e.code === 14);
  await s.kv.put({ key: B('c'), value: B('3') });
  await s.kv.deleteRange({ key: B('a') });
  c.restart(1);
  // The leader's next heartbeat finds it back; its answer asks for the entries it missed (etcd's probe).
  await c.advance(c.heartbeatMs);
  const m1 = c.members[1]!;
  assert.equal(m1.server.mvcc.currentRevision, 5, 'after the restart and catch-up it holds every revision');
  assert.ok(m1.server.lessor.exists(BigInt(g.ID)), 'the lease came back from the backend');
  assert.deepEqual(m1.server.lessor.keyStringsOf(BigInt(g.ID)), ['b']);
  const h0 = await c.member(0).services.maintenance.hashKV({});
  const h1 = await c.member(1).services.maintenance.hashKV({});
  assert.equal(h1.hash, h0.hash);
  assert.equal(c.status(1).raftAppliedIndex, c.status(0).raftAppliedIndex);
  c.close();
});

test('a follower behind the compacted log gets the leader\'s snapshot; its watchers are resynced', async () => {
  const c = newCluster();
  const s = c.member(0).services;
  await s.kv.put({ key: B('k'), value: B('0') });
  const call = c.member(2).services.watch();
  call.write({ request_union: 'create_request', create_request: { key: B('k') } });
  call.take();
  c.isolate(2);
  for (let i = 1; i <= 20; i++) await s.kv.put({ key: B('k'), value: B(String(i)) });
  assert.equal(c.compactLog(), c.committedIndex);
  c.heal();
  await c.advance(100);
  assert.ok(c.trace().some((e) => e.event.startsWith('snapshot infra1 -> infra3')));
  const m2 = c.members[2]!;
  assert.equal(m2.server.mvcc.currentRevision, 22);
  assert.equal((await c.member(2).services.maintenance.hashKV({})).hash, (await s.maintenance.hashKV({})).hash);
  // After the restore the watcher is unsynced; the sync step sends it the revisions it missed, in order.
  await c.advance(100);
  const revs = call.take().flatMap((r) => r.events.map((e) => e.kv!.mod_revision));
  assert.deepEqual(revs, Array.from({ length: 20 }, (_, i) => String(i + 3)));
  c.close();
});

test('etcd#20221 in its native form: a future-revision watch on a follower that installs a snapshot', async () => {
  for (const fixed of [true, false]) {
    const c = newCluster({ restoreKeepsFutureMinRev: fixed });
    const s = c.member(0).services;
    await s.kv.put({ key: B('k'), value: B('0') }); // revision 2
    // A client watches from the future revision 20 on member 2, which then falls behind the leader's log.
    const call = c.member(2).services.watch();
    call.write({ request_union: 'create_request', create_request: { key: B('k'), start_revision: '20' } });
    call.take();
    c.isolate(2);
    for (let i = 1; i <= 12; i++) await s.kv.put({ key: B('k'), value: B(String(i)) }); // revisions 3..14
    c.compactLog();
    c.heal();
    await c.advance(300); // the snapshot (revision 14, below the start revision) restores member 2's store
    assert.ok(c.trace().some((e) => e.event.startsWith('snapshot infra1 -> infra3')));
    for (let i = 13; i <= 20; i++) await s.kv.put({ key: B('k'), value: B(String(i)) }); // revisions 15..22
    await c.advance(300);
    const revs = call.take().flatMap((r) => r.events.map((e) => Number(e.kv!.mod_revision)));
    if (fixed) assert.deepEqual(revs, [20, 21, 22], 'only revisions from the start revision on (etcd PR #20281)');
    else assert.deepEqual(revs, [15, 16, 17, 18, 19, 20, 21, 22], 'the historical bug: revisions below the start revision');
    c.close();
  }
});

test('client links: a delayed link adds latency both ways; a dropped one loses the call until the client deadline', async () => {
  const c = newCluster();
  c.delayLink('app', 1, 40);
  const slow = outcome(c.connect(1, { client: 'app' }).kv.put({ key: B('k'), value: B('v') }));
  await c.advance(79);
  assert.equal(slow.done, false);
  await c.advance(1);
  assert.equal(slow.done, true);
  c.dropLink('app', 2);
  const lost = outcome(c.connect(2, { client: 'app', deadlineMs: 2000 }).kv.range({ key: B('k') }));
  await c.advance(2000);
  assert.deepEqual(lost.error, { code: 4, details: 'context deadline exceeded' });
  const other = await c.connect(2, { client: 'other' }).kv.range({ key: B('k') });
  assert.equal(valueOf(other), 'v');
  c.close();
});

test('MoveLeader answers as etcd: not leader, bad transferee, and the term moves by one', async () => {
  const c = newCluster();
  await assert.rejects(c.member(1).services.maintenance.moveLeader({ targetID: String(c.members[2]!.id) }), (e: { code: number; details: string }) => e.code === 9 && e.details === 'etcdserver: not leader');
  await assert.rejects(c.member(0).services.maintenance.moveLeader({ targetID: '12345' }), (e: { details: string }) => e.details === 'etcdserver: bad leader transferee');
  await c.member(0).services.maintenance.moveLeader({ targetID: String(c.members[1]!.id) });
  assert.equal(c.leader?.index, 1);
  assert.equal(c.term, 3n);
  const put = await c.member(0).services.kv.put({ key: B('k'), value: B('v') });
  assert.equal(put.header.raft_term, '3');
  c.close();
});

/** A fixed scenario with faults, recorded as the trace plus every member's final hash. */
async function scenario(seed: number): Promise<string> {
  const c = newCluster({ seed, applyLagMs: [0, 30, 70] });
  const out: string[] = [];
  const g = await c.member(0).services.lease.leaseGrant({ TTL: '2' });
  out.push(g.ID);
  for (let i = 0; i < 30; i++) {
    const m = c.member(i % 3).services;
    const p = m.kv.put({ key: B(`k${i % 5}`), value: B(String(i)), lease: i % 4 === 0 ? g.ID : '0' });
    p.then((r) => out.push(`put ${i} ${r.header.revision} ${r.header.raft_term}`), (e: Error) => out.push(`put ${i} ${e.message}`));
    if (i === 8) c.pause(0);
    if (i === 12) c.resume(0);
    if (i === 15) c.isolate(c.leader?.index ?? 0);
    if (i === 22) c.heal();
    if (i === 25) c.crash(2);
    if (i === 28) c.restart(2);
    await c.advance(250);
  }
  await c.advance(3000);
  for (const m of c.members) out.push(`${m.name} ${m.role} ${m.term} ${(await c.connect(m).maintenance.hashKV({})).hash}`);
  c.close();
  return JSON.stringify({ trace: c.trace(), out });
}

test('determinism: the same seed gives a byte-identical run, faults included', async () => {
  const a = await scenario(11);
  const b = await scenario(11);
  assert.equal(a, b);
  assert.ok(a.includes('leader'), 'the run elected leaders');
});

test('auth through the log: a token from one member works on every member', async () => {
  const c = newCluster({ applyLagMs: [0, 20, 40] });
  const s0 = c.member(0).services;
  await s0.auth.userAdd({ name: 'root', password: 'pw' });
  await s0.auth.userGrantRole({ user: 'root', role: 'root' });
  await s0.auth.authEnable({});
  await c.advance(40);
  const auth = outcome(c.member(1).services.auth.authenticate({ name: 'root', password: 'pw' }));
  await c.advance(20);
  const token = auth.value!.token;
  // t = 60. Member 2 applies the Authenticate entry (committed at 40) at 80: until then it holds the call
  // (etcd's token check waits for the index the token names), then proposes; it answers at 80 + 40.
  const put = outcome(c.member(2).services.kv.put({ key: B('k'), value: B('v') }, { token }));
  await c.advance(59);
  assert.equal(put.done, false);
  await c.advance(1);
  assert.equal(put.error, undefined);
  assert.equal(put.value!.header.revision, '2');
  assert.equal(valueOf(await s0.kv.range({ key: B('k') }, { token })), 'v');
  await assert.rejects(s0.kv.put({ key: B('k'), value: B('x') }), (e: { details: string }) => e.details === 'etcdserver: user name is empty');
  await assert.rejects(s0.kv.put({ key: B('k'), value: B('x') }, { token: 'bogus.1' }), (e: { details: string }) => e.details === 'etcdserver: invalid auth token');
  for (const m of c.members) assert.equal(m.server.mvcc.currentRevision, 2);
  c.close();
});

test('one member (the default) is an ordinary member that leads alone', async () => {
  const c = newCluster({ members: 1 });
  const r = await c.member(0).services.kv.put({ key: B('k'), value: B('v') });
  assert.equal(r.header.revision, '2');
  assert.equal((await c.member(0).services.maintenance.status()).raftIndex, '5');
  c.close();
});
