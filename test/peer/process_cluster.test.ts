/**
 * Three `etcdsim etcd` processes given one --initial-cluster form one cluster (src/peer/process_member.ts):
 * each logs etcd's start-up in etcd's order (elected leader, published, ready, enabled capabilities), the
 * IDs are etcd's, one leader (at term 2 unless load made a later election) that every member names, `member list` names every member with its
 * URLs on every member, a write at a follower is read at another member (linearizable through ReadIndex,
 * then serializable from its own state), HashKV agrees, `member update` moves a member's peer URL through
 * Raft with etcd's errors. Then the leader is SIGKILLed: the two left elect a
 * new leader and keep serving writes; the killed member started again on its data dir rejoins with its
 * identity and serves what was written meanwhile; on the same cluster a learner is added, its process joins
 * and catches up, and it is promoted. A cluster of its own, on peer TLS, loses a member to member remove.
 * Another, with --snapshot-count 20, compacts its log: a member added later and one restarted after an
 * outage catch up from the leader's snapshot.
 * Every member checks Raft's invariants on its node after each Ready (ETCDSIM_RAFT_CHECK=1: a violation
 * ends its process). A real-time test of processes: every wait is for a condition, with a deadline, re-checked as the
 * processes answer.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { connect as tlsConnect } from 'node:tls';
import type { Readable } from 'node:stream';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connectEtcd, type EtcdGrpcClient } from '../../src/grpc/client.js';
import { freePort } from '../../src/diff/etcd_process.js';
import { clusterIdOf, memberIdOf } from '../../src/server/member_id.js';

const ETCDSIM = resolve('bin/etcdsim.js');
const root = mkdtempSync(join(tmpdir(), 'etcdsim-process-cluster-'));
const NAMES = ['p1', 'p2', 'p3'];

interface Proc {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  stderr(): string;
  readonly exited: Promise<number | null>;
}

const running = new Set<Proc>();
/** The first test's cluster, which the learner test goes on with (a start of three processes costs seconds under load). */
let first: { ports: readonly Ports[]; procs: Proc[]; clients: readonly EtcdGrpcClient[] } | undefined;
after(() => {
  first?.clients.forEach((c) => c.close());
  for (const p of running) p.child.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

interface Ports {
  readonly client: number;
  readonly peer: number;
}

/** A member's flags; `peer: 'https'` puts the peer URLs on TLS with --peer-auto-tls. */
function args(name: string, ports: readonly Ports[], peer: 'http' | 'https' = 'http'): string[] {
  const i = NAMES.indexOf(name);
  const own = ports[i]!;
  return [
    'etcd', '--name', name, '--data-dir', join(root, `${name}.etcd`),
    '--listen-client-urls', `http://127.0.0.1:${own.client}`, '--advertise-client-urls', `http://127.0.0.1:${own.client}`,
    '--listen-peer-urls', `${peer}://127.0.0.1:${own.peer}`, '--initial-advertise-peer-urls', `${peer}://127.0.0.1:${own.peer}`,
    '--initial-cluster', NAMES.map((n, k) => `${n}=${peer}://127.0.0.1:${ports[k]!.peer}`).join(','),
    '--initial-cluster-state', 'new', '--initial-cluster-token', 'tok', '--logger', 'zap',
    ...(peer === 'https' ? ['--peer-auto-tls'] : []),
  ];
}

/** Whether the port answers a TLS handshake (a peer port on https peer URLs must; a plain one cannot). */
function speaksTls(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      s.destroy();
      res(true);
    });
    s.on('error', () => res(false));
    s.setTimeout(10_000, () => {
      s.destroy();
      res(false);
    });
  });
}

/** Starts a member (etcd 3.4 unless `version` says) and resolves once it logged the line etcd's e2e harness waits for (or exited). */
async function start(name: string, ports: readonly Ports[], argv: readonly string[] = args(name, ports), version = '3.4'): Promise<Proc> {
  const child = spawn(process.execPath, [ETCDSIM, ...argv], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ETCDSIM_ETCD_VERSION: version, ETCDSIM_RAFT_CHECK: '1', ETCDSIM_TEST_LEASE_CHECKPOINT_INTERVAL_MS: '2000' } });
  let err = '';
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  const p: Proc = { child, stderr: () => err, exited };
  running.add(p);
  void exited.then(() => running.delete(p));
  await new Promise<void>((res, rej) => {
    const guard = setTimeout(() => rej(new Error(`${name} did not get ready; stderr:\n${err}`)), 60_000);
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes('enabled capabilities for version')) {
        clearTimeout(guard);
        res();
      }
    });
    void exited.then((code) => {
      clearTimeout(guard);
      rej(new Error(`${name} exited ${code}:\n${err}`));
    });
  });
  return p;
}

/** Re-checks `probe` until it holds (every 50 ms), failing after `ms` with the last answer. */
async function eventually<T>(what: string, probe: () => Promise<T>, holds: (t: T) => boolean, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const t = await probe();
      if (holds(t)) return t;
      last = t;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const text = (b: unknown): string => Buffer.from(b as Uint8Array).toString();


test('three etcdsim etcd processes form one cluster, lose their leader to SIGKILL and take it back', { timeout: 120_000 }, async () => {
  const ports: Ports[] = [];
  for (let i = 0; i < 3; i++) ports.push({ client: await freePort(), peer: await freePort() });
  const procs = await Promise.all(NAMES.map((n) => start(n, ports)));
  const clients: EtcdGrpcClient[] = ports.map((p) => connectEtcd(`127.0.0.1:${p.client}`, { deadlineMs: 5000 }));
  // Closed at the end of the file: the learner test goes on with them.
  first = { ports, procs, clients };

  // etcd's IDs: each member's from its peer URL and the token, the cluster's from the three.
  const ids = ports.map((p) => memberIdOf([`http://127.0.0.1:${p.peer}`], 'tok'));
  const clusterId = clusterIdOf(ids);
  for (const [i, p] of procs.entries()) {
    const log = p.stderr();
    const id = ids[i]!.toString(16);
    for (const line of [`starting local member","local-member-id":"${id}","cluster-id":"${clusterId.toString(16)}"`, '"msg":"starting initial election tick advance","election-ticks":10', 'elected leader', `published local member to cluster through raft","local-member-id":"${id}"`, 'enabled capabilities for version']) {
      assert.ok(log.includes(line), `${NAMES[i]} logged ${line}:\n${log}`);
    }
    assert.ok(log.indexOf('elected leader') < log.indexOf('published local member') && log.indexOf('published local member') < log.indexOf('enabled capabilities'), 'etcd\'s order');
  }

  // One leader, at term 2, named by every member; the Raft index the same everywhere once settled.
  const statuses = await eventually('one leader every member names', () => Promise.all(clients.map((c) => c.maintenance.status({}))), (ss) => new Set(ss.map((s) => String(s.leader))).size === 1 && String(ss[0]!.leader) !== '0');
  const leaderId = BigInt(String(statuses[0]!.leader));
  assert.ok(ids.includes(leaderId));
  // Term 2 as a fresh etcd shows: the first election, at the term the initial tick advance starts it. On a
  // loaded machine a member's heartbeats can come later than its election timeout (real time, three
  // processes), and then another election moves the term on, as it would on etcd: the fresh figures below
  // (Raft index 8) are checked at term 2, when no such election came.
  for (const [i, s] of statuses.entries()) {
    assert.equal(String(s.header?.member_id), String(ids[i]));
    assert.equal(String(s.header?.cluster_id), String(clusterId));
    assert.ok(Number(s.raftTerm) >= 2, `term ${String(s.raftTerm)}`);
  }

  // member list: every member, named, with its URLs, on every member.
  for (const c of clients) {
    const ml = await eventually('every member published', () => c.cluster.memberList({}), (r) => (r.members ?? []).every((m) => (m.clientURLs ?? []).length === 1));
    const listed = (ml.members ?? []).map((m) => `${m.name} ${String(m.ID)} ${(m.peerURLs ?? []).join()} ${(m.clientURLs ?? []).join()}`).sort();
    assert.deepEqual(listed, NAMES.map((n, i) => `${n} ${ids[i]} http://127.0.0.1:${ports[i]!.peer} http://127.0.0.1:${ports[i]!.client}`).sort());
  }

  // etcd's first entries: 3 conf changes, the leader's empty entry, 3 published members, the cluster version.
  // After a later election, each new leader's empty entry comes after them: the index is past 8, applied alike.
  for (const c of clients) await eventually('Raft index 8, as a fresh 3-member etcd 3.4.23 shows', () => c.maintenance.status({}), (s) => (String(s.raftTerm) === '2' ? String(s.raftIndex) === '8' : Number(s.raftIndex) > 8) && String(s.raftAppliedIndex) === String(s.raftIndex));

  // A write at a follower, read linearizably at another member, then serializably from each one's own state.
  const leaderIx = ids.indexOf(leaderId);
  const followers = [0, 1, 2].filter((i) => i !== leaderIx);
  const put = await clients[followers[0]!]!.kv.put({ key: Buffer.from('a'), value: Buffer.from('1') });
  const rev = Number(put.header?.revision);
  const got = await clients[followers[1]!]!.kv.range({ key: Buffer.from('a') });
  assert.equal(text(got.kvs?.[0]?.value), '1');
  for (const c of clients) {
    const s = await eventually('applied everywhere', () => c.kv.range({ key: Buffer.from('a'), serializable: true }), (r) => Number(r.header?.revision) === rev);
    assert.equal(text(s.kvs?.[0]?.value), '1');
  }
  const hashes = await Promise.all(clients.map((c) => c.maintenance.hashKV({ revision: rev })));
  assert.equal(new Set(hashes.map((h) => h.hash)).size, 1, 'one history');

  // member update (etcd's UpdateNode through Raft): a follower's peer URL named `localhost` (the same port),
  // applied and listed on every member, logged as etcd logs it; the leader's stream to it is dialed anew.
  const upd = followers[1]!;
  const moved = `http://localhost:${ports[upd]!.peer}`;
  const asker = clients[followers[0]!]!;
  const applied = async (): Promise<number> => Number((await asker.maintenance.status({})).raftAppliedIndex);
  const before = await applied();
  const updated = await asker.cluster.memberUpdate({ ID: String(ids[upd]), peerURLs: [moved] });
  assert.deepEqual(updated.members?.find((m) => String(m.ID) === String(ids[upd]))?.peerURLs, [moved]);
  for (const c of clients) await eventually('the update applied', () => c.cluster.memberList({}), (r) => r.members?.find((m) => String(m.ID) === String(ids[upd]))?.peerURLs?.[0] === moved);
  for (const p of procs) assert.match(p.stderr(), new RegExp(`"msg":"updated member".*"updated-remote-peer-id":"${ids[upd]!.toString(16)}","updated-remote-peer-urls":\\["${moved}"\\]`));
  // etcd's errors: an unknown member, a URL another member has (both checked by the apply: each takes an
  // index, as on etcd 3.4.23), URLs that do not parse (refused before proposing: etcd's other members panic).
  await assert.rejects(asker.cluster.memberUpdate({ ID: '1234', peerURLs: ['http://localhost:1'] }), /etcdserver: member not found/);
  await assert.rejects(asker.cluster.memberUpdate({ ID: String(ids[upd]), peerURLs: [moved, `http://127.0.0.1:${ports[leaderIx]!.peer}`] }), /etcdserver: Peer URLs already exists/);
  await assert.rejects(asker.cluster.memberUpdate({ ID: String(ids[upd]), peerURLs: ['not a url'] }), /etcdserver: given member URLs are invalid/);
  assert.equal(await applied(), before + 3);
  const put2 = await clients[leaderIx]!.kv.put({ key: Buffer.from('after-update'), value: Buffer.from('1') });
  await eventually('the updated member still follows', () => clients[upd]!.kv.range({ key: Buffer.from('after-update'), serializable: true }), (r) => Number(r.header?.revision) >= Number(put2.header?.revision));

  // SIGKILL the leader: the two left elect another and keep serving writes.
  procs[leaderIx]!.child.kill('SIGKILL');
  await procs[leaderIx]!.exited;
  const left = followers.map((i) => clients[i]!);
  const after1 = await eventually('a new leader', () => Promise.all(left.map((c) => c.maintenance.status({}))), (ss) => ss.every((s) => String(s.leader) !== '0' && BigInt(String(s.leader)) !== leaderId && String(s.leader) === String(ss[0]!.leader)));
  assert.ok(Number(after1[0]!.raftTerm) > 2);
  await eventually('a write without the old leader', () => left[0]!.kv.put({ key: Buffer.from('b'), value: Buffer.from('2') }), () => true);

  // Started again on its data dir, it rejoins with its identity and catches up.
  procs[leaderIx] = await start(NAMES[leaderIx]!, ports);
  assert.match(procs[leaderIx]!.stderr(), /restarting local member/);
  const back = clients[leaderIx]!;
  const caught = await eventually('the restarted member caught up', () => back.kv.range({ key: Buffer.from('b'), serializable: true }), (r) => r.kvs?.length === 1);
  assert.equal(text(caught.kvs?.[0]?.value), '2');
  const st = await back.maintenance.status({});
  assert.equal(String(st.header?.member_id), String(ids[leaderIx]));
});

test('then, on that cluster: member add --learner, a process joining with --initial-cluster-state existing catches up from the log, member promote', { timeout: 120_000 }, async () => {
  // The first test's cluster, all three members running again (its old leader restarted).
  assert.ok(first !== undefined, 'the first test left its cluster');
  const ports: Ports[] = [...first.ports, { client: await freePort(), peer: await freePort() }];
  const clients = [...first.clients, connectEtcd(`127.0.0.1:${ports[3]!.client}`, { deadlineMs: 5000 })];
  after(() => clients[3]!.close());
  await eventually('a leader', () => Promise.all(clients.slice(0, 3).map((c) => c.maintenance.status({}))), (s) => s.every((x) => String(x.leader) !== '0'));
  for (let i = 0; i < 5; i++) await clients[i % 3]!.kv.put({ key: Buffer.from(`k${i}`), value: Buffer.from(String(i)) });

  const p4 = ports[3]!;
  // Within 5 s of a peer's stream coming up (the restarted member's) etcd refuses it: unhealthy cluster.
  const added = await eventually('the learner added', () => clients[0]!.cluster.memberAdd({ peerURLs: [`http://127.0.0.1:${p4.peer}`], isLearner: true }), () => true);
  const id4 = String(added.member?.ID);
  assert.equal(added.member?.isLearner, true);
  assert.equal(added.members?.length, 4);
  // Not started yet: a learner cannot be promoted before it caught up (etcd's words).
  await assert.rejects(clients[0]!.cluster.memberPromote({ ID: id4 }), /learner member which is in sync with leader|re-configuration failed/);

  const cluster = [...NAMES, 'p4'].map((n, k) => `${n}=http://127.0.0.1:${ports[k]!.peer}`).join(',');
  const p4proc = await start('p4', ports, [
    'etcd', '--name', 'p4', '--data-dir', join(root, 'p4.etcd'),
    '--listen-client-urls', `http://127.0.0.1:${p4.client}`, '--advertise-client-urls', `http://127.0.0.1:${p4.client}`,
    '--listen-peer-urls', `http://127.0.0.1:${p4.peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${p4.peer}`,
    '--initial-cluster', cluster, '--initial-cluster-state', 'existing', '--initial-cluster-token', 'tok', '--logger', 'zap',
    '--initial-election-tick-advance=false',
  ]);
  // Its first election clock is not advanced (the flag reaches the member's Raft loop), as etcd logs it.
  assert.match(p4proc.stderr(), /"msg":"skipping initial election tick advance","election-ticks":10/);
  const got = await eventually('the learner caught up', () => clients[3]!.kv.range({ key: Buffer.from('k'), range_end: Buffer.from('l'), serializable: true }), (r) => r.kvs?.length === 5);
  assert.deepEqual(got.kvs?.map((kv) => text(kv.value)), ['0', '1', '2', '3', '4']);
  const st = await clients[3]!.maintenance.status({});
  assert.equal(String(st.header?.member_id), id4);
  assert.equal(st.isLearner, true);

  const promoted = await eventually('the promotion', () => clients[0]!.cluster.memberPromote({ ID: id4 }), () => true);
  assert.equal(promoted.members?.find((m) => String(m.ID) === id4)?.isLearner, false);
  const ml = await eventually('p4 published', () => clients[3]!.cluster.memberList({}), (r) => r.members?.find((m) => String(m.ID) === id4)?.name === 'p4');
  assert.equal(ml.members?.length, 4);
  // Done with this cluster: the next test starts its own.
  for (const p of [...running]) {
    p.child.kill('SIGKILL');
    await p.exited;
  }
});

test('member remove on peer TLS (--peer-auto-tls): the removed process stops as etcd does, the others go on as a cluster of two', { timeout: 120_000 }, async () => {
  const ports: Ports[] = [];
  for (let i = 0; i < 3; i++) ports.push({ client: await freePort(), peer: await freePort() });
  rmSync(join(root, 'p1.etcd'), { recursive: true, force: true });
  rmSync(join(root, 'p2.etcd'), { recursive: true, force: true });
  rmSync(join(root, 'p3.etcd'), { recursive: true, force: true });
  const procs = await Promise.all(NAMES.map((n) => start(n, ports, args(n, ports, 'https'))));
  const clients = ports.map((p) => connectEtcd(`127.0.0.1:${p.client}`, { deadlineMs: 5000 }));
  after(() => clients.forEach((c) => c.close()));
  const ids = ports.map((p) => memberIdOf([`https://127.0.0.1:${p.peer}`], 'tok'));
  const ss = await eventually('a leader', () => Promise.all(clients.map((c) => c.maintenance.status({}))), (s) => s.every((x) => String(x.leader) !== '0'));
  const leaderIx = ids.indexOf(BigInt(String(ss[0]!.leader)));
  // The members found each other over TLS: the peer ports speak nothing else.
  assert.deepEqual(await Promise.all(ports.map((p) => speaksTls(p.peer))), [true, true, true]);
  const gone = (leaderIx + 1) % 3;
  const asker = (leaderIx + 2) % 3;

  // Unknown member: etcd's error, nothing changes.
  await assert.rejects(clients[asker]!.cluster.memberRemove({ ID: '12345' }), /member not found/);
  // Removed while SIGSTOPped, the member never gets the entry that removes it (the leader stops sending to
  // it): on SIGCONT the others refuse its streams as removed (etcd's 410 Gone) and it stops as etcd's does.
  procs[gone]!.child.kill('SIGSTOP');
  // (Refused with `unhealthy cluster` until the streams have been up 5 s, as etcd's --strict-reconfig-check does.)
  const removed = await eventually('the removal', () => clients[asker]!.cluster.memberRemove({ ID: String(ids[gone]) }), () => true);
  assert.deepEqual((removed.members ?? []).map((m) => String(m.ID)).sort(), ids.filter((_, i) => i !== gone).map(String).sort());
  procs[gone]!.child.kill('SIGCONT');
  const code = await Promise.race([procs[gone]!.exited, new Promise((_, rej) => setTimeout(() => rej(new Error(`the removed member did not exit:\n${procs[gone]!.stderr()}`)), 30_000).unref())]);
  assert.equal(code, 0);
  assert.match(procs[gone]!.stderr(), /the member has been permanently removed from the cluster/);
  for (const i of [leaderIx, asker]) {
    const ml = await eventually('the removal applied', () => clients[i]!.cluster.memberList({}), (r) => r.members?.length === 2);
    assert.ok(!(ml.members ?? []).some((m) => String(m.ID) === String(ids[gone])));
  }
  await clients[asker]!.kv.put({ key: Buffer.from('after'), value: Buffer.from('x') });
  // Two voters left, both up: removing one more would leave one started voter of one, allowed; a quorum holds.
  const st = await clients[leaderIx]!.maintenance.status({});
  assert.equal(String(st.leader), String(ids[leaderIx]));
});

test('--snapshot-count: a member added after the leader compacted its log, and one restarted after a long outage, catch up from the leader\'s snapshot', { timeout: 120_000 }, async () => {
  // etcd 3.5's --experimental-snapshot-catchup-entries (3.4 keeps 5000 entries after a snapshot, more than this test writes).
  // Lease checkpoints too, kept in the db (every 2 s: the test's ETCDSIM_TEST_LEASE_CHECKPOINT_INTERVAL_MS; etcd's first check of a lease
  // finding its whole TTL left, rounded up, would skip it for good).
  const snapFlags = ['--snapshot-count', '20', '--experimental-snapshot-catchup-entries', '5', '--experimental-enable-lease-checkpoint', '--experimental-enable-lease-checkpoint-persist'];
  // The previous test's cluster is done with: never two clusters at once.
  for (const p of [...running]) {
    p.child.kill('SIGKILL');
    await p.exited;
  }
  const ports: Ports[] = [];
  for (let i = 0; i < 4; i++) ports.push({ client: await freePort(), peer: await freePort() });
  for (const n of [...NAMES, 'p4']) rmSync(join(root, `${n}.etcd`), { recursive: true, force: true });
  const procs = await Promise.all(NAMES.map((n) => start(n, ports, [...args(n, ports), ...snapFlags], '3.5')));
  const clients = ports.map((p) => connectEtcd(`127.0.0.1:${p.client}`, { deadlineMs: 5000 }));
  after(() => clients.forEach((c) => c.close()));
  const ids = ports.map((p) => memberIdOf([`http://127.0.0.1:${p.peer}`], 'tok'));
  const ss = await eventually('a leader', () => Promise.all(clients.slice(0, 3).map((c) => c.maintenance.status({}))), (s) => s.every((x) => String(x.leader) !== '0'));
  const leaderIx = ids.indexOf(BigInt(String(ss[0]!.leader)));
  const lease = await clients[leaderIx]!.lease.leaseGrant({ TTL: 600, ID: '0' });
  const grantedAt = Date.now();
  for (let i = 0; i < 100; i++) await clients[i % 3]!.kv.put({ key: Buffer.from(`k${String(i).padStart(3, '0')}`), value: Buffer.from(String(i)), lease: i === 7 ? lease.ID : '0' });
  await clients[leaderIx]!.kv.deleteRange({ key: Buffer.from('k050') });

  // Each member snapshotted its state and let the log go: member/snap holds etcd's db and snap files.
  for (const n of NAMES) {
    const snaps = await eventually(`${n} snapshotted`, async () => readdirSync(join(root, `${n}.etcd`, 'member', 'snap')), (f) => f.includes('db') && f.some((x) => x.endsWith('.snap')));
    assert.ok(snaps.length > 0);
  }

  /** Every member listed answers with one revision and one HashKV at it. */
  const agree = async (ixs: readonly number[]): Promise<void> => {
    const heads = await eventually('one revision everywhere', () => Promise.all(ixs.map((i) => clients[i]!.kv.range({ key: Buffer.from('k'), serializable: true }))), (rs) => new Set(rs.map((r) => String(r.header?.revision))).size === 1);
    const rev = Number(heads[0]!.header?.revision);
    const hashes = await Promise.all(ixs.map((i) => clients[i]!.maintenance.hashKV({ revision: rev })));
    assert.equal(new Set(hashes.map((h) => h.hash)).size, 1, `one history at revision ${rev}: ${hashes.map((h) => h.hash).join(' ')}`);
  };

  // A new member joins: the log it needs from index 1 is gone, so the leader sends its db first.
  const p4 = ports[3]!;
  const added = await eventually('p4 added', () => clients[leaderIx]!.cluster.memberAdd({ peerURLs: [`http://127.0.0.1:${p4.peer}`] }), () => true);
  const id4 = String(added.member?.ID);
  const cluster = [...NAMES, 'p4'].map((n, k) => `${n}=http://127.0.0.1:${ports[k]!.peer}`).join(',');
  const proc4 = await start('p4', ports, [
    'etcd', '--name', 'p4', '--data-dir', join(root, 'p4.etcd'),
    '--listen-client-urls', `http://127.0.0.1:${p4.client}`, '--advertise-client-urls', `http://127.0.0.1:${p4.client}`,
    '--listen-peer-urls', `http://127.0.0.1:${p4.peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${p4.peer}`,
    '--initial-cluster', cluster, '--initial-cluster-state', 'existing', '--initial-cluster-token', 'tok', '--logger', 'zap', ...snapFlags,
    '--max-snapshots', '1',
  ], '3.5');
  assert.match(proc4.stderr(), /"msg":"applied snapshot".*"incoming-leader-snapshot-index":\d+/);
  const got = await eventually('p4 caught up', () => clients[3]!.kv.range({ key: Buffer.from('k'), range_end: Buffer.from('l'), serializable: true, count_only: true }), (r) => String(r.count) === '99');
  assert.equal(String(got.count), '99');
  await agree([0, 1, 2, 3]);
  // What came in the snapshot: the members (names, URLs) and the lease with its key.
  const ml = await clients[3]!.cluster.memberList({});
  assert.deepEqual(ml.members?.map((m) => m.name).sort(), ['p1', 'p2', 'p3', 'p4']);
  const ttl = await clients[3]!.lease.leaseTimeToLive({ ID: lease.ID, keys: true });
  assert.deepEqual(ttl.keys?.map((k) => text(k)), ['k007']);
  assert.equal(String((await clients[3]!.maintenance.status({})).header?.member_id), id4);

  // A follower down while the others write and compact past its log: restarted, it installs a snapshot too.
  const down = [0, 1, 2].find((i) => i !== leaderIx)!;
  procs[down]!.child.kill('SIGKILL');
  await procs[down]!.exited;
  const up = [0, 1, 2, 3].filter((i) => i !== down);
  for (let i = 0; i < 40; i++) await clients[up[i % up.length]!]!.kv.put({ key: Buffer.from(`late${i}`), value: Buffer.from(String(i)) });
  procs[down] = await start(NAMES[down]!, ports, [...args(NAMES[down]!, ports), ...snapFlags], '3.5');
  await eventually('the restarted member installed a snapshot', async () => procs[down]!.stderr(), (e) => e.includes('"msg":"applied snapshot"'));
  const late = await eventually('it caught up', () => clients[down]!.kv.range({ key: Buffer.from('late'), range_end: Buffer.from('latf'), serializable: true, count_only: true }), (r) => String(r.count) === '40');
  assert.equal(String(late.count), '40');
  await agree([0, 1, 2, 3]);

  // Old snap files purged as etcd purges them: the leader, seven snapshots in (once more than
  // --snapshot-count entries were applied since the last, as etcd's), keeps the default --max-snapshots 5
  // and logs each one it deleted; p4, with --max-snapshots 1, keeps only its newest: its own, not the leader's.
  const snapFiles = (n: string): string[] => readdirSync(join(root, `${n}.etcd`, 'member', 'snap')).filter((f) => f.endsWith('.snap')).sort();
  const indexOf = (f: string): number => Number(BigInt(`0x${f.slice(17, 33)}`));
  const leaderSnaps = snapFiles(NAMES[leaderIx]!);
  assert.equal(leaderSnaps.length, 5, leaderSnaps.join());
  assert.ok(indexOf(leaderSnaps[0]!) > 42, leaderSnaps.join());
  assert.match(procs[leaderIx]!.stderr(), /"msg":"purged","path":"[^"]*member\/snap\/[0-9a-f]{16}-[0-9a-f]{16}\.snap"/);
  for (const n of NAMES) assert.ok(snapFiles(n).length <= 5, n);
  const received = Number(/"incoming-leader-snapshot-index":(\d+)/.exec(proc4.stderr())![1]);
  const p4Snaps = await eventually('p4 snapshotted after the leader\'s snapshot', async () => snapFiles('p4'), (f) => f.length === 1 && indexOf(f[0]!) > received);
  assert.equal(p4Snaps.length, 1);

  // Lease checkpoints: leadership moved to the restarted member (its lease state from the leader's db and
  // the log since), whose lessor starts the lease from its checkpointed remaining TTL (plus an election
  // timeout), not from the granted 600 s as without checkpoints.
  await eventually('leadership moved to the restarted member', () => clients[leaderIx]!.maintenance.moveLeader({ targetID: String(ids[down]) }), () => true);
  const elapsed = Math.floor((Date.now() - grantedAt) / 1000);
  assert.ok(elapsed >= 5, `the test ran ${elapsed} s since the grant: too short to tell a checkpoint from a reset`);
  const left = await eventually('the new leader answers', () => clients[down]!.lease.leaseTimeToLive({ ID: lease.ID }), (r) => Number(r.TTL) > 0);
  // (An election timeout on top, and up to 2 s since the last checkpoint.)
  assert.ok(Number(left.TTL) <= 600 - elapsed + 4, `remaining ${left.TTL} s, ${elapsed} s after the grant`);
});
