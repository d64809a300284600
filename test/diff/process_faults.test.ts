/**
 * Faults by the operating system on a 3-member cluster of separate processes (issue 31), run first on the
 * real etcd 3.4.23 — the specification — and with the same steps on etcdsim as the etcd binary
 * (PROCESS_BINARIES): SIGKILL a member and the others elect and serve; start it again on its data dir and
 * it rejoins as the same member and catches up; SIGSTOP the leader and the others elect a new one, and on
 * SIGCONT the old one steps down into the new term; with two members killed the third answers as etcd
 * does when it has no quorum. Lease calls at a follower are answered by the leader's lessor (etcd forwards
 * LeaseKeepAlive and LeaseTimeToLive to its leader over the peer URLs): a lease kept alive through a
 * follower outlives its TTL while one not kept alive expires, etcdctl's `lease keep-alive` / `timetolive`
 * at a follower print the leader's figures, and without a leader both fail as etcd's do. Every wait is for
 * a condition, bounded (helpers.ts `until`).
 *
 * The three cases of a binary run in order on one cluster (each starts from three running members with a
 * leader, which the one before leaves): a start of three etcdsim processes costs seconds on a loaded machine.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Etcd3 } from 'etcd3';
import { startEtcdCluster, type EtcdCluster } from '../../src/diff/etcd_cluster.js';
import { hostNow } from '../../src/sim/index.js';
import { PROCESS_BINARIES, until } from './helpers.js';

const b = (s: string): Buffer => Buffer.from(s);

/** The leader the running members report, once it is not `old` (an election after `old` was hurt). */
function newLeader(c: EtcdCluster, old: number): Promise<number> {
  return until(async () => {
    const l = await c.leader();
    return l === undefined || l === old ? undefined : l;
  }, `a leader other than ${c.members[old]!.name}`);
}

/** The gRPC code and message of a failed call (grpc-js puts "<code> <NAME>: " before etcd's message). */
function grpcFailure(err: unknown): { code: number; message: string } {
  const e = err as { code?: number; details?: string };
  return { code: e.code ?? -1, message: e.details ?? String(err) };
}

/** etcdctl (3.4.23) at `address`: its exit code and what it printed. */
function etcdctl(address: string, ...args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('etcdctl', [`--endpoints=${address}`, '--command-timeout=10s', ...args], { env: { ...process.env, ETCDCTL_API: '3' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, out }));
  });
}

/**
 * Lease calls at follower `f`: etcd3's automatic keep-alive (every third of the TTL) through `f` keeps a
 * 2 s lease and its key past the moment a lease granted after it, not kept alive, is revoked by the leader;
 * etcdctl at `f` prints the leader's TTLs; a lease nobody granted is "already expired".
 */
async function leaseAtFollower(c: EtcdCluster, f: number): Promise<void> {
  const etcd3 = new Etcd3({ hosts: `http://${c.members[f]!.address}` });
  try {
    const kept = etcd3.lease(2);
    let lost: unknown;
    kept.on('lost', (err) => (lost = err));
    await kept.put('kept').value('1');
    const unkept = etcd3.lease(2, { autoKeepAlive: false });
    await unkept.put('unkept').value('1');
    await until(async () => ((await c.client(f).kv.range({ key: b('unkept') })).kvs.length === 0 ? true : undefined), 'the lease not kept alive expires', 20_000, 100);
    assert.equal(lost, undefined, 'the kept lease was not lost');
    assert.equal((await c.client(f).kv.range({ key: b('kept') })).kvs[0]?.value.toString(), '1', 'the lease kept alive at a follower outlived its TTL');
    const hex = BigInt(await kept.grant()).toString(16).padStart(16, '0'); // etcdctl prints %016x
    const ttl = await etcdctl(c.members[f]!.address, 'lease', 'timetolive', hex, '--keys');
    assert.match(ttl.out, new RegExp(`^lease ${hex} granted with TTL\\(2s\\), remaining\\([012]s\\), attached keys\\(\\[kept\\]\\)\n$`));
    const once = await etcdctl(c.members[f]!.address, 'lease', 'keep-alive', '--once', hex);
    assert.deepEqual(once, { code: 0, out: `lease ${hex} keepalived with TTL(2)\n` });
    const gone = BigInt(await unkept.grant()).toString(16).padStart(16, '0');
    assert.deepEqual(await etcdctl(c.members[f]!.address, 'lease', 'timetolive', gone), { code: 0, out: `lease ${gone} already expired\n` });
    const unknown = await c.client(f).lease.leaseTimeToLive({ ID: '12345' });
    assert.deepEqual([unknown.TTL, unknown.grantedTTL, unknown.header.member_id], ['-1', '0', c.members[f]!.id]);
    await kept.revoke();
  } finally {
    etcd3.close();
  }
}

/** A keep-alive stream at `client` renewing `id` once: resolves with the first answer's TTL, rejects with the error that ends the stream. */
function keepAliveOnce(client: ReturnType<EtcdCluster['client']>, id: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const call = client.lease.leaseKeepAlive();
    call.onResponse((rs) => {
      resolve(rs[0]!.TTL);
      call.end();
    });
    call.onEnd((err) => (err === undefined ? resolve('ended') : reject(err)));
    call.write({ ID: id });
  });
}

for (const bin of PROCESS_BINARIES) describe(bin.name, { skip: bin.skip }, () => {
  let shared: EtcdCluster | undefined;
  // Each call may wait out etcd's request timeout (5 s + 2 election timeouts = 7 s) in the no-quorum case: a
  // longer deadline than the launcher's.
  before(async () => (shared = await startEtcdCluster({ bin: bin.bin, size: 3, deadlineMs: 20_000 })), { timeout: 90_000 });
  after(() => shared?.stop());
  /** The shared cluster (started by `before`). */
  const cluster = (): EtcdCluster => {
    assert.ok(shared !== undefined, 'the cluster started');
    return shared;
  };

  test(`${bin.name}: SIGKILL a member, the others elect and serve; restarted on its data dir it rejoins as itself and catches up`, { timeout: 90_000 }, async () => {
    const c = cluster();
    const leader = await c.waitForLeader();
    const id = c.members[leader]!.id;
    await leaseAtFollower(c, (leader + 1) % 3);
    const term = BigInt((await c.client(leader).maintenance.status({})).raftTerm);
    await c.client(leader).kv.put({ key: b('before'), value: b('0') });

    await c.kill(leader);
    const next = await newLeader(c, leader);
    const survivors = [0, 1, 2].filter((i) => i !== leader);
    // Both survivors take writes and serve linearizable reads of each other's.
    for (const i of survivors) await c.client(i).kv.put({ key: b(`while-down-${i}`), value: b(String(i)) });
    for (const i of survivors) {
      const other = survivors.find((j) => j !== i)!;
      assert.equal((await c.client(i).kv.range({ key: b(`while-down-${other}`) })).kvs[0]?.value.toString(), String(other));
    }
    const after = await c.client(next).maintenance.status({});
    assert.ok(BigInt(after.raftTerm) > term, `the election raised the term (${term} -> ${after.raftTerm})`);

    await c.restart(leader);
    // The same member (its ID, derived from its name and peer URLs, and kept in its data dir) ...
    const status = await c.client(leader).maintenance.status({});
    assert.equal(status.header.member_id, id);
    assert.deepEqual((await c.client(leader).cluster.memberList({})).members.map((m) => m.ID).sort(), c.members.map((m) => m.id).sort());
    // ... which follows the new term's leader and caught up: a linearizable read, then its own applied state.
    for (const i of survivors) assert.equal((await c.client(leader).kv.range({ key: b(`while-down-${i}`) })).kvs[0]?.value.toString(), String(i));
    for (const i of survivors) assert.equal((await c.client(leader).kv.range({ key: b(`while-down-${i}`), serializable: true })).kvs[0]?.value.toString(), String(i));
    assert.equal((await c.client(leader).kv.range({ key: b('before'), serializable: true })).kvs[0]?.value.toString(), '0');
    const rejoined = await until(async () => {
      const s = await c.client(leader).maintenance.status({});
      return s.leader !== '0' && s.leader !== id ? s : undefined;
    }, 'the restarted member names the new leader');
    assert.ok(BigInt(rejoined.raftTerm) >= BigInt(after.raftTerm));
  });

  test(`${bin.name}: SIGSTOP the leader, the others elect a new one; on SIGCONT the old leader steps down into the new term`, { timeout: 90_000 }, async () => {
    const c = cluster();
    const old = await c.waitForLeader();
    const oldId = c.members[old]!.id;
    const term = BigInt((await c.client(old).maintenance.status({})).raftTerm);
    const lease = (await c.client(old).lease.leaseGrant({ TTL: 60, ID: '0' })).ID;
    c.pause(old);
    const next = await newLeader(c, old);
    const nextStatus = await c.client(next).maintenance.status({});
    assert.ok(BigInt(nextStatus.raftTerm) > term, `a new term (${term} -> ${nextStatus.raftTerm})`);
    await c.client(next).kv.put({ key: b('while-paused'), value: b('1') });
    // The new leader's lessor, promoted, holds the lease: a follower's TimeToLive is answered from it.
    const follower = [0, 1, 2].find((i) => i !== old && i !== next)!;
    const ttl = await c.client(follower).lease.leaseTimeToLive({ ID: lease });
    assert.equal(ttl.grantedTTL, '60');
    assert.ok(Number(ttl.TTL) > 0 && Number(ttl.TTL) <= 60, `remaining ${ttl.TTL}`);

    c.resume(old);
    // The old leader hears the new term and follows its leader. Status's raftTerm is the term of the last
    // entry the member applied (etcd sets it in apply), so it reaches the new term once the old leader
    // applied the new leader's first entry — a moment after it names the new leader.
    await until(async () => {
      const s = await c.client(old).maintenance.status({});
      return s.leader !== oldId && s.leader !== '0' && BigInt(s.raftTerm) >= BigInt(nextStatus.raftTerm) ? s : undefined;
    }, `${c.members[old]!.name} steps down into term ${nextStatus.raftTerm} after SIGCONT`);
    assert.notEqual(await c.leader(), old);
    assert.equal((await c.client(old).kv.range({ key: b('while-paused') })).kvs[0]?.value.toString(), '1');
    // The old leader, a follower now, renews at the new leader.
    assert.equal(await keepAliveOnce(c.client(old), lease), '60');
  });

  test(`${bin.name}: two members killed, the third has no quorum: no leader, writes and linearizable reads time out as etcd's do, serializable reads answer`, { timeout: 90_000 }, async () => {
    const c = cluster();
    const leader = await c.waitForLeader();
    const alone = (leader + 1) % 3;
    await c.client(alone).kv.put({ key: b('k'), value: b('1') });
    const lease = (await c.client(alone).lease.leaseGrant({ TTL: 60, ID: '0' })).ID;
    for (let i = 0; i < 3; i++) if (i !== alone) await c.kill(i);
    const cl = c.client(alone);
    // Without its peers the member's Raft loses the leader: it campaigns (a follower's election timeout),
    // or steps down (a leader's check that a quorum still answers).
    await until(async () => ((await cl.maintenance.status({})).leader === '0' ? true : undefined), 'the lone member knows no leader');

    const start = hostNow();
    const [put, get, serializable, renew, ttl] = await Promise.allSettled([
      cl.kv.put({ key: b('k'), value: b('2') }),
      cl.kv.range({ key: b('k') }),
      cl.kv.range({ key: b('k'), serializable: true }),
      keepAliveOnce(cl, lease),
      cl.lease.leaseTimeToLive({ ID: lease }),
    ]);
    // etcd 3.4.23: with no leader its raft node takes no proposal, so the put waits until the request
    // timeout's context expires and that context's own error comes back, with gRPC's Unknown code.
    assert.equal(put.status, 'rejected');
    assert.deepEqual(grpcFailure(put.reason), { code: 2, message: 'context deadline exceeded' });
    // A linearizable read waits for a read index no leader gives, until etcd's request timeout.
    assert.equal(get.status, 'rejected');
    assert.deepEqual(grpcFailure(get.reason), { code: 14, message: 'etcdserver: request timed out' });
    assert.ok(hostNow() - start >= 5_000, `the answers came after the request timeout (${hostNow() - start} ms)`);
    // A serializable read is the member's own applied state, quorum or not.
    assert.equal(serializable.status, 'fulfilled');
    assert.equal(serializable.value.kvs[0]?.value.toString(), '1');
    // Lease calls wait for a leader to forward them to (etcd's waitLeader), until the request timeout.
    assert.equal(renew.status, 'rejected');
    assert.deepEqual(grpcFailure(renew.reason), { code: 14, message: 'etcdserver: no leader' });
    assert.equal(ttl.status, 'rejected');
    assert.deepEqual(grpcFailure(ttl.reason), { code: 14, message: 'etcdserver: no leader' });

    // One member back makes a quorum of two: a leader again, and the write goes through.
    await c.restart(leader);
    await c.waitForLeader();
    await cl.kv.put({ key: b('k'), value: b('3') });
    assert.equal((await c.client(leader).kv.range({ key: b('k') })).kvs[0]?.value.toString(), '3');
  });
});
