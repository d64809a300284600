/**
 * Lock and Election over gRPC, differentially: the same sequence of calls (grpc-js clients built from
 * etcdsim's protos) against `serve({ port: 0 })` and against a real etcd 3.4.23, and the two transcripts
 * compared after normalising what legitimately differs — lease IDs (chosen by each server; also in the
 * keys, in hex), cluster/member IDs, and which side of a deadline's race answered (grpc-js's own timer or
 * the server's `2 context deadline exceeded`).
 * Revisions, keys, values, codes and messages must be equal. Outside CI the test skips when `etcd` is not
 * on PATH; in CI a missing etcd fails it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import * as http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { startEtcd } from '../../src/diff/etcd_process.js';
import { requireCommand } from '../support/prerequisites.js';
import { serve } from '../../src/grpc/server.js';
import { etcdService } from '../../src/grpc/index.js';

/** The differential test needs a real etcd: skipped without one outside CI, a failure in CI. */
const skip = requireCommand('etcd');

type Msg = Record<string, unknown>;
type Unary = (req: Msg, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Msg) => void) => grpc.ClientUnaryCall;

const B = (s: string): Buffer => Buffer.from(s, 'utf8');
/** Failure guard for conditions awaited on a real server (never reached when things work). */
const GUARD_MS = 10_000;

/** One server's clients (KV, Lease, Lock, Election over one channel each). */
class Target {
  private readonly clients: Record<'kv' | 'lease' | 'lock' | 'election', grpc.Client>;

  constructor(address: string) {
    const [Lock, Election] = [etcdService('Lock'), etcdService('Election')];
    const cr = grpc.credentials.createInsecure();
    this.clients = {
      kv: new (etcdService('KV'))(address, cr),
      lease: new (etcdService('Lease'))(address, cr),
      lock: new Lock(address, cr),
      election: new Election(address, cr),
    };
  }

  /** Starts a unary call; `call` can cancel it. */
  start(svc: keyof Target['clients'], method: string, req: Msg, opts: grpc.CallOptions = {}): { result: Promise<Msg>; call: grpc.ClientUnaryCall } {
    const client = this.clients[svc] as unknown as Record<string, Unary>;
    const fn = client[method];
    if (fn === undefined) throw new Error(`no method ${method}`);
    let call!: grpc.ClientUnaryCall;
    const result = new Promise<Msg>((resolve, reject) => {
      call = fn.call(client, req, new grpc.Metadata(), opts, (err, res) => (err ? reject(err) : resolve(res ?? {})));
    });
    return { result, call };
  }

  call(svc: keyof Target['clients'], method: string, req: Msg, opts?: grpc.CallOptions): Promise<Msg> {
    return this.start(svc, method, req, opts).result;
  }

  observe(req: Msg): grpc.ClientReadableStream<Msg> {
    const client = this.clients.election as unknown as Record<string, (req: Msg) => grpc.ClientReadableStream<Msg>>;
    return client['Observe']!.call(client, req);
  }

  /** Resolves once the key exists (`present`) or is gone: a waiter's key is in place, or was released. */
  async until(key: string, present: boolean): Promise<void> {
    const give = performance.now() + GUARD_MS;
    for (;;) {
      const r = await this.call('kv', 'Range', { key: B(key), count_only: true });
      if ((r['count'] !== '0') === present) return;
      if (performance.now() > give) throw new Error(`key ${key} never became ${present ? 'present' : 'absent'}`);
    }
  }

  close(): void {
    for (const c of Object.values(this.clients)) c.close();
  }
}

/** A transcript entry: a label and what came back (answer or {code, details}). */
type Entry = [string, unknown];

/** What a call answered, or its error's code and details. */
async function outcome(p: Promise<Msg>): Promise<unknown> {
  try {
    return await p;
  } catch (err) {
    const e = err as grpc.ServiceError;
    // A deadline races: grpc-js's own timer (4, with its timings in the text) or the server's answer at the
    // same moment (etcd's handler returns the context's error: 2 "context deadline exceeded").
    const clientSide = e.code === grpc.status.DEADLINE_EXCEEDED && e.details.startsWith('Deadline exceeded');
    const serverSide = e.code === grpc.status.UNKNOWN && e.details === 'context deadline exceeded';
    if (clientSide || serverSide) return { deadline: 'exceeded' };
    return { code: e.code, details: e.details };
  }
}

/** Collects an Observe stream's messages; `count(n)` resolves once n have arrived. */
function collect(stream: grpc.ClientReadableStream<Msg>): { seen: unknown[]; count(n: number): Promise<void>; ended: Promise<unknown> } {
  const seen: unknown[] = [];
  let wake: (() => void) | undefined;
  stream.on('data', (m: Msg) => {
    seen.push(m);
    wake?.();
  });
  const ended = new Promise<unknown>((resolve) => {
    stream.on('error', (e: grpc.ServiceError) => resolve({ code: e.code, details: e.details }));
    stream.on('end', () => resolve('end'));
  });
  return {
    seen,
    ended,
    async count(n) {
      const guard = setTimeout(() => wake?.(), GUARD_MS);
      while (seen.length < n) {
        const before = seen.length;
        await new Promise<void>((resolve) => (wake = resolve));
        if (seen.length === before) break;
      }
      clearTimeout(guard);
      assert.ok(seen.length >= n, `observe: ${seen.length} messages, expected ${n}`);
    },
  };
}

const idOf = (r: Msg): string => String(r['ID']);
const hex = (id: string): string => BigInt(id).toString(16);

/** The whole sequence against one server; returns its transcript and the lease IDs it saw (in grant order). */
async function run(t: Target): Promise<{ log: Entry[]; leases: string[] }> {
  const log: Entry[] = [];
  const rec = async (label: string, p: Promise<Msg>): Promise<Msg> => {
    const o = await outcome(p);
    log.push([label, o]);
    return o as Msg;
  };

  // ---- Lock
  await rec('lock, missing lease', t.call('lock', 'Lock', { name: B('l'), lease: '12345' }));
  const A = idOf(await t.call('lease', 'LeaseGrant', { TTL: 60 }));
  const Bl = idOf(await t.call('lease', 'LeaseGrant', { TTL: 60 }));
  const C = idOf(await t.call('lease', 'LeaseGrant', { TTL: 60 }));
  const leases = [A, Bl, C];
  await rec('put x', t.call('kv', 'Put', { key: B('x'), value: B('1') }));
  const lockA = await rec('lock A', t.call('lock', 'Lock', { name: B('l'), lease: A }));
  await rec('lock A again (key reused)', t.call('lock', 'Lock', { name: B('l'), lease: A }));
  const lockB = t.start('lock', 'Lock', { name: B('l'), lease: Bl });
  await t.until(`l/${hex(Bl)}`, true);
  await rec('l/ while B waits', t.call('kv', 'Range', { key: B('l/'), range_end: B('l0') }));
  await rec('put y', t.call('kv', 'Put', { key: B('y'), value: B('1') }));
  await rec('unlock A', t.call('lock', 'Unlock', { key: lockA['key'] }));
  await rec('lock B, once A is unlocked', lockB.result);
  await rec('unlock missing key', t.call('lock', 'Unlock', { key: B('nope') }));
  await rec('unlock empty key', t.call('lock', 'Unlock', { key: B('') }));
  await rec('lock C, deadline while waiting', t.call('lock', 'Lock', { name: B('l'), lease: C }, { deadline: Date.now() + 400 }));
  await t.until(`l/${hex(C)}`, false);
  await rec('l/ after the deadline', t.call('kv', 'Range', { key: B('l/'), range_end: B('l0') }));
  const canceled = t.start('lock', 'Lock', { name: B('l'), lease: C });
  await t.until(`l/${hex(C)}`, true);
  canceled.call.cancel();
  await rec('lock C, canceled while waiting', canceled.result);
  await t.until(`l/${hex(C)}`, false);
  await rec('l/ after the cancel', t.call('kv', 'Range', { key: B('l/'), range_end: B('l0') }));
  await rec('lock z with lease 0', t.call('lock', 'Lock', { name: B('z'), lease: '0' }));
  // Lease IDs are normalised by the order in which they were granted: note those granted by a request.
  const noteGranted = async (): Promise<string[]> => {
    const granted = ((await t.call('lease', 'LeaseLeases', {}))['leases'] as Msg[]).map(idOf).filter((id) => !leases.includes(id));
    assert.ok(granted.length <= 1, 'one call grants at most one lease');
    leases.push(...granted);
    return granted;
  };
  const granted = await noteGranted();
  await rec('lease 0 got a 60 s lease', t.call('lease', 'LeaseTimeToLive', { ID: granted[0] ?? '0' }).then((r) => ({ grantedTTL: r['grantedTTL'] })));

  // ---- Election
  await rec('leader of an empty election', t.call('election', 'Leader', { name: B('e') }));
  await rec('campaign, missing lease', t.call('election', 'Campaign', { name: B('e'), lease: '777', value: B('v') }));
  await rec('proclaim without leader', t.call('election', 'Proclaim', { value: B('v') }));
  await rec('resign without leader', t.call('election', 'Resign', {}));
  await rec('proclaim with an empty leader', t.call('election', 'Proclaim', { leader: {}, value: B('v') }));
  await noteGranted(); // a leader key with lease 0 opens a session on a new lease, even for Proclaim
  const obs = collect(t.observe({ name: B('e') }));
  const a = await rec('campaign A', t.call('election', 'Campaign', { name: B('e'), lease: A, value: B('a1') }));
  await obs.count(1);
  await rec('campaign A again, same value', t.call('election', 'Campaign', { name: B('e'), lease: A, value: B('a1') }));
  await rec('campaign A again, new value', t.call('election', 'Campaign', { name: B('e'), lease: A, value: B('a2') }));
  await obs.count(2);
  const campaignB = t.start('election', 'Campaign', { name: B('e'), lease: Bl, value: B('b1') });
  await t.until(`e/${hex(Bl)}`, true);
  await rec('leader while B waits', t.call('election', 'Leader', { name: B('e') }));
  const leaderA = a['leader'] as Msg;
  await rec('proclaim A', t.call('election', 'Proclaim', { leader: leaderA, value: B('a3') }));
  await obs.count(3);
  await rec('proclaim with a stale rev', t.call('election', 'Proclaim', { leader: { ...leaderA, rev: '1' }, value: B('zz') }));
  await rec('resign with a stale rev', t.call('election', 'Resign', { leader: { ...leaderA, rev: '1' } }));
  await rec('resign A', t.call('election', 'Resign', { leader: leaderA }));
  await rec('campaign B, once A resigned', campaignB.result);
  await obs.count(4);
  await rec('leader B', t.call('election', 'Leader', { name: B('e') }));
  await rec('revoke B', t.call('lease', 'LeaseRevoke', { ID: Bl }));
  await rec('leader after the revoke', t.call('election', 'Leader', { name: B('e') }));
  await rec('campaign with lease 0', t.call('election', 'Campaign', { name: B('e'), lease: '0', value: B('z') }));
  await noteGranted();
  await obs.count(5);
  const campaignC = t.start('election', 'Campaign', { name: B('e'), lease: C, value: B('c') }, { deadline: Date.now() + 400 });
  await rec('campaign C, deadline while waiting', campaignC.result);
  await t.until(`e/${hex(C)}`, false);
  await rec('every key at the end', t.call('kv', 'Range', { key: B('\0'), range_end: B('\0') }));
  const stream = t.observe({ name: B('e') });
  const second = collect(stream);
  await second.count(1);
  stream.cancel();
  log.push(['second observer, then canceled', { seen: second.seen, ended: await second.ended }]);
  log.push(['observe', obs.seen]);
  return { log, leases };
}

/** Replaces what legitimately differs: lease IDs (decimal and hex) by their grant order, cluster and member IDs. */
function normalise(r: { log: Entry[]; leases: string[] }): unknown {
  let text = JSON.stringify(r.log, (_k, v: unknown) => {
    if (typeof v === 'object' && v !== null && (v as { type?: unknown }).type === 'Buffer' && Array.isArray((v as { data?: unknown }).data)) {
      return `bytes:${Buffer.from((v as { data: number[] }).data).toString('utf8')}`;
    }
    return v;
  });
  text = text.replace(/"cluster_id":"\d+"/g, '"cluster_id":"C"').replace(/"member_id":"\d+"/g, '"member_id":"M"');
  r.leases.forEach((id, i) => {
    text = text.split(`"${id}"`).join(`"lease#${i}"`).split(`/${hex(id)}"`).join(`/<lease#${i}>"`);
  });
  return JSON.parse(text) as unknown;
}

test('Lock and Election over gRPC answer as etcd 3.4.23 does (codes, messages, keys, revisions)', { skip }, async () => {
  const sim = await serve({ port: 0, etcdVersion: '3.4' });
  const etcd = await startEtcd();
  const targets = [new Target(sim.address), new Target(etcd.address)];
  try {
    const [fromSim, fromEtcd] = await Promise.all(targets.map((t) => run(t)));
    const a = normalise(fromSim!) as Entry[];
    const b = normalise(fromEtcd!) as Entry[];
    // Entry by entry first, for a readable failure.
    for (let i = 0; i < Math.max(a.length, b.length); i++) assert.deepStrictEqual(a[i], b[i], `entry ${i} (${String(b[i]?.[0])})`);
    // The lock and election answers themselves are what etcd's clients depend on; spot-check their shape.
    const byLabel = new Map(a);
    assert.deepStrictEqual(byLabel.get('lock, missing lease'), { code: 2, details: 'etcdserver: requested lease not found' });
    assert.deepStrictEqual(byLabel.get('proclaim with a stale rev'), { code: 2, details: 'election: not leader' });
    assert.deepStrictEqual(byLabel.get('leader after the revoke'), { code: 2, details: 'election: no leader' });
    assert.deepStrictEqual((byLabel.get('lock B, once A is unlocked') as { key: string }).key, 'bytes:l/<lease#1>');
  } finally {
    for (const t of targets) t.close();
    await Promise.all([sim.close(), etcd.stop()]);
  }
});

/** A gRPC request frame of a LockRequest {name, lease} (field 1 bytes, field 2 varint), encoded by hand. */
function lockRequestFrame(name: string, lease: bigint): Buffer {
  const varint: number[] = [];
  for (let v = lease; ; v >>= 7n) {
    if (v < 0x80n) {
      varint.push(Number(v));
      break;
    }
    varint.push(Number(v & 0x7fn) | 0x80);
  }
  const msg = Buffer.concat([Buffer.from([0x0a, name.length]), B(name), Buffer.from([0x10, ...varint])]);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(msg.length, 1);
  return Buffer.concat([head, msg]);
}

test('serve(): a client that disconnects while its Lock waits releases the key, as etcd does', async () => {
  const sim = await serve({ port: 0 });
  const t = new Target(sim.address);
  try {
    const A = idOf(await t.call('lease', 'LeaseGrant', { TTL: 60 }));
    const Bl = idOf(await t.call('lease', 'LeaseGrant', { TTL: 60 }));
    await t.call('lock', 'Lock', { name: B('l'), lease: A });
    // A second connection asks for the lock, then goes away without a word (socket destroyed).
    const session = http2.connect(`http://${sim.address}`);
    const stream = session.request({ ':method': 'POST', ':path': '/v3lockpb.Lock/Lock', 'content-type': 'application/grpc', te: 'trailers' });
    stream.on('error', () => {});
    stream.end(lockRequestFrame('l', BigInt(Bl)));
    await t.until(`l/${hex(Bl)}`, true);
    assert.equal(sim.openStreams, 1);
    session.destroy();
    await t.until(`l/${hex(Bl)}`, false);
    assert.equal(sim.openStreams, 0);
    // The holder is undisturbed.
    assert.equal((await t.call('kv', 'Range', { key: B('l/'), range_end: B('l0'), count_only: true }))['count'], '1');
    // An Observe whose client goes away is released too (its watcher with it).
    const session2 = http2.connect(`http://${sim.address}`);
    const observe = session2.request({ ':method': 'POST', ':path': '/v3electionpb.Election/Observe', 'content-type': 'application/grpc', te: 'trailers' });
    observe.on('error', () => {});
    const first = new Promise<void>((resolve) => observe.once('data', () => resolve()));
    observe.end(Buffer.from([0, 0, 0, 0, 3, 0x0a, 0x01, 0x6c])); // LeaderRequest{name: "l"}
    await first; // the current leader, l's lock holder
    assert.equal(sim.server.services.election.calls().length, 1);
    session2.destroy();
    const give = performance.now() + GUARD_MS;
    while (sim.server.services.election.calls().length > 0 && performance.now() < give) await new Promise<void>((r) => setImmediate(r));
    assert.equal(sim.server.services.election.calls().length, 0);
    assert.equal(sim.server.watchable.synced.size + sim.server.watchable.unsynced.size, 0);
  } finally {
    t.close();
    await sim.close();
  }
});

test('serve(): a token naming a raft index not applied yet holds Lock, Unlock and Leader until writes reach it, as etcd holds them (its KV token check)', async () => {
  const sim = await serve({ port: 0, etcdVersion: '3.4' });
  const t = new Target(sim.address);
  const [Lock, Election] = [etcdService('Lock'), etcdService('Election')];
  const cr = grpc.credentials.createInsecure();
  const lock = new Lock(sim.address, cr) as unknown as Record<string, (req: Msg, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null) => void) => void>;
  const election = new Election(sim.address, cr) as unknown as typeof lock;
  try {
    const md = new grpc.Metadata();
    md.set('token', `abcdefghijklmnop.${sim.server.raftIndex + 2}`);
    const answered: string[] = [];
    const ask = (client: typeof lock, method: string, req: Msg): Promise<string> =>
      new Promise((resolve) =>
        client[method]!.call(client, req, md, { deadline: Date.now() + GUARD_MS }, (err) => {
          const a = `${method}: ${err === null ? 'ok' : `${err.code} ${err.details}`}`;
          answered.push(a);
          resolve(a);
        }),
      );
    const calls = [ask(lock, 'Lock', { name: B('L') }), ask(lock, 'Unlock', { key: B('L/1') }), ask(election, 'Leader', { name: B('E') })];
    // All three are on the server, held (an HTTP/2 stream each), and none is answered.
    const give = performance.now() + GUARD_MS;
    while (sim.openHttp2Streams < 3 && performance.now() < give) await new Promise<void>((r) => setImmediate(r));
    assert.equal(sim.openHttp2Streams, 3);
    await t.call('kv', 'Put', { key: B('w'), value: B('1') });
    assert.deepEqual(answered, []);
    // The second write reaches the token's index: the calls run, and the member refuses the token as etcd does.
    await t.call('kv', 'Put', { key: B('w'), value: B('2') });
    assert.deepEqual(await Promise.all(calls), ['Lock: 2 etcdserver: invalid auth token', 'Unlock: 2 etcdserver: invalid auth token', 'Leader: 2 etcdserver: invalid auth token']);
  } finally {
    (lock as unknown as grpc.Client).close();
    (election as unknown as grpc.Client).close();
    t.close();
    await sim.close();
  }
});

test('serve() 3.4: an Observe whose token names a raft index not applied yet is held until writes reach it, then ends as etcd 3.4.23 ends it for a bad token (OK, no message)', async () => {
  const sim = await serve({ port: 0, etcdVersion: '3.4' });
  const t = new Target(sim.address);
  const Election = etcdService('Election');
  const election = new Election(sim.address, grpc.credentials.createInsecure());
  try {
    const md = new grpc.Metadata();
    md.set('token', `abcdefghijklmnop.${sim.server.raftIndex + 2}`);
    const seen: string[] = [];
    const observe = (election as unknown as Record<string, (req: Msg, md: grpc.Metadata, opts: grpc.CallOptions) => grpc.ClientReadableStream<Msg>>)['Observe']!.call(
      election,
      { name: B('E') },
      md,
      { deadline: Date.now() + GUARD_MS },
    );
    const ended = new Promise<string>((resolve) => {
      observe.on('data', () => seen.push('data'));
      observe.on('error', () => {});
      observe.on('status', (st: grpc.StatusObject) => {
        seen.push('status');
        resolve(`${st.code} ${st.details}`);
      });
    });
    const give = performance.now() + GUARD_MS;
    while (sim.openHttp2Streams < 1 && performance.now() < give) await new Promise<void>((r) => setImmediate(r));
    assert.equal(sim.openHttp2Streams, 1);
    await t.call('kv', 'Put', { key: B('w'), value: B('1') });
    assert.deepEqual(seen, [], 'held while the index is not applied');
    await t.call('kv', 'Put', { key: B('w'), value: B('2') });
    assert.equal(await ended, '0 ');
    assert.deepEqual(seen, ['status']);
  } finally {
    election.close();
    t.close();
    await sim.close();
  }
});
