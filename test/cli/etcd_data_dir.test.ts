/**
 * `etcdsim etcd --data-dir DIR` keeps its member in DIR as etcd does (src/server/kept_member.ts): a random
 * workload of puts, deletes, txns, lease grants and attachments, lease revokes, users, roles, permissions
 * and compactions runs against the process, which is SIGKILLed with a request in flight, started again on
 * the same directory, worked on, stopped by SIGTERM, started again, worked on, stopped by SIGINT and started
 * a last time: each time it must serve exactly what an in-process member holds after the requests it
 * answered (or also the one in flight at the SIGKILL) — every revision of the history, the compaction
 * point, the leases, users, roles and permissions. The seed is printed with a failure (ETCDSIM_SEED replays).
 *
 * Then a directory etcd 3.4.23 wrote, served here; what etcd does with one it cannot read, side by side
 * with etcd on a directory etcd wrote (a changed WAL byte, a db that is not bbolt; test/server/kept_member.property.test.ts tears the WAL's
 * last record), and a real etcd's snapshot
 * restored by `etcdctl snapshot restore` served with its keys, hashes and users. Outside CI those skip
 * without etcd / etcdctl.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connectEtcd, type EtcdGrpcClient } from '../../src/grpc/client.js';
import { EtcdServer } from '../../src/server/index.js';
import { SimRandom, VirtualClock, freshSeed, hostNow } from '../../src/sim/index.js';
import { freePort } from '../../src/diff/etcd_process.js';
import { requireCommand, requireCommands } from '../support/prerequisites.js';

const ETCDSIM = resolve('bin/etcdsim.js');

interface Member {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  readonly port: number;
  stderr(): string;
  readonly exited: Promise<number | null>;
}

/** `args` for a member named n1 on `port` (its peer port the next one) with its data in `dir`. */
const memberArgs = (dir: string, port: number): string[] => [
  '--name', 'n1', '--data-dir', dir,
  '--listen-client-urls', `http://127.0.0.1:${port}`, '--advertise-client-urls', `http://127.0.0.1:${port}`,
  '--listen-peer-urls', `http://127.0.0.1:${port + 1}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${port + 1}`,
  '--initial-cluster', `n1=http://127.0.0.1:${port + 1}`,
];

/** Starts `etcd` (etcdsim's, or the real one) and resolves once it logged the line harnesses wait for, or exited. */
async function start(which: 'etcdsim' | 'etcd', dir: string, port: number, env: Record<string, string> = {}): Promise<Member> {
  const [cmd, argv] = which === 'etcd' ? ['etcd', memberArgs(dir, port)] : [process.execPath, [ETCDSIM, 'etcd', ...memberArgs(dir, port)]];
  const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ETCDSIM_ETCD_VERSION: '3.4', ...env } });
  let err = '';
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  await new Promise<void>((res) => {
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes('enabled capabilities for version')) res();
    });
    void exited.then(() => res());
  });
  return { child, port, stderr: () => err, exited };
}

/** What a member serves, read through etcd's API: the whole history, leases, users, roles. */
interface Api {
  range(req: object): Promise<{ header?: { revision?: string } | null; kvs: Array<{ key: Uint8Array; value: Uint8Array; create_revision: string; mod_revision: string; version: string; lease: string }> }>;
  leaseLeases(): Promise<{ leases: Array<{ ID: string }> }>;
  userList(): Promise<{ users: string[] }>;
  userGet(req: { name: string }): Promise<{ roles: string[] }>;
  roleList(): Promise<{ roles: string[] }>;
  roleGet(req: { role: string }): Promise<{ perm: Array<{ permType: string; key: Uint8Array; range_end: Uint8Array }> }>;
}

const ALL = { key: Buffer.from([0]), range_end: Buffer.from([0]) };
const text = (b: Uint8Array): string => Buffer.from(b).toString();

async function dump(api: Api): Promise<unknown> {
  const now = await api.range(ALL);
  const current = Number(now.header?.revision ?? 0);
  const history: unknown[] = [];
  for (let rev = 1; rev <= current; rev++) {
    try {
      const r = await api.range({ ...ALL, revision: String(rev) });
      history.push(r.kvs.map((kv) => `${text(kv.key)}=${text(kv.value)}@${kv.create_revision}/${kv.mod_revision}/${kv.version}/${kv.lease}`));
    } catch {
      history.push('compacted');
    }
  }
  const users: unknown[] = [];
  for (const u of (await api.userList()).users) users.push([u, (await api.userGet({ name: u })).roles]);
  const roles: unknown[] = [];
  for (const r of (await api.roleList()).roles) roles.push([r, (await api.roleGet({ role: r })).perm.map((p) => `${p.permType}:${text(p.key)}-${text(p.range_end)}`)]);
  return { current, history, leases: (await api.leaseLeases()).leases.map((l) => String(l.ID)).sort(), users, roles };
}

/** The in-process member's services as the same async API (its answers are the same messages). */
function referenceApi(s: EtcdServer): Api {
  return {
    range: async (req) => s.services.kv.range(req as never) as never,
    leaseLeases: async () => s.services.lease.leaseLeases({}) as never,
    userList: async () => s.services.auth.userList({}) as never,
    userGet: async (req) => s.services.auth.userGet(req) as never,
    roleList: async () => s.services.auth.roleList({}) as never,
    roleGet: async (req) => s.services.auth.roleGet(req) as never,
  };
}

function servedApi(c: EtcdGrpcClient): Api {
  return {
    range: (req) => c.kv.range(req as never) as never,
    leaseLeases: () => c.lease.leaseLeases({}) as never,
    userList: () => c.auth.userList({}) as never,
    userGet: (req) => c.auth.userGet(req) as never,
    roleList: () => c.auth.roleList({}) as never,
    roleGet: (req) => c.auth.roleGet(req) as never,
  };
}

/** One random request: sent to the process, and (once answered) applied to the references. */
type Request = (c: EtcdGrpcClient) => Promise<(s: EtcdServer) => void>;

function randomRequest(r: SimRandom, leases: string[]): Request {
  const rnd = { int: (n: number): number => r.nextInt(0, n - 1) };
  const key = (): Buffer => Buffer.from(`k${rnd.int(8)}`);
  const pick = rnd.int(100);
  if (pick < 35) {
    const req = { key: key(), value: Buffer.from(`v${rnd.int(1000)}`), lease: leases.length > 0 && rnd.int(3) === 0 ? leases[rnd.int(leases.length)]! : '0' };
    return async (c) => (await c.kv.put(req), (s) => s.services.kv.put(req));
  }
  if (pick < 45) {
    const req = rnd.int(4) === 0 ? { key: Buffer.from('k'), range_end: Buffer.from('l') } : { key: key() };
    return async (c) => (await c.kv.deleteRange(req), (s) => s.services.kv.deleteRange(req));
  }
  if (pick < 60) {
    const k = key();
    const req = {
      compare: [{ key: k, target: 'VERSION', result: 'EQUAL', version: String(rnd.int(3)) }],
      success: [{ request_put: { key: k, value: Buffer.from(`t${rnd.int(1000)}`) } }, { request_put: { key: key(), value: Buffer.from('x') } }],
      failure: [{ request_delete_range: { key: k } }],
    };
    return async (c) => (await c.kv.txn(req as never), (s) => s.services.kv.txn(req as never));
  }
  if (pick < 72) {
    const asked = rnd.int(2) === 0 ? '0' : String(100 + rnd.int(50));
    return async (c) => {
      const r = await c.lease.leaseGrant({ ID: asked, TTL: '600' });
      leases.push(String(r.ID));
      return (s) => s.services.lease.leaseGrant({ ID: String(r.ID), TTL: '600' });
    };
  }
  if (pick < 77 && leases.length > 0) {
    const req = { ID: leases.splice(rnd.int(leases.length), 1)[0]! };
    return async (c) => (await c.lease.leaseRevoke(req), (s) => s.services.lease.leaseRevoke(req));
  }
  if (pick < 85) {
    const name = `u${rnd.int(4)}`;
    const role = `r${rnd.int(3)}`;
    return async (c) => {
      await c.auth.userAdd({ name, password: `p-${name}` }).catch(() => undefined);
      await c.auth.roleAdd({ name: role }).catch(() => undefined);
      await c.auth.userGrantRole({ user: name, role });
      return (s) => {
        for (const f of [() => s.services.auth.userAdd({ name, password: `p-${name}` }), () => s.services.auth.roleAdd({ name: role })]) {
          try {
            f();
          } catch {
            // exists already, as the process answered
          }
        }
        s.services.auth.userGrantRole({ user: name, role });
      };
    };
  }
  if (pick < 93) {
    const role = `r${rnd.int(3)}`;
    const perm = { permType: rnd.int(2) === 0 ? 'READ' : 'READWRITE', key: key(), range_end: Buffer.from('l') };
    return async (c) => {
      await c.auth.roleAdd({ name: role }).catch(() => undefined);
      await c.auth.roleGrantPermission({ name: role, perm } as never);
      return (s) => {
        try {
          s.services.auth.roleAdd({ name: role });
        } catch {
          // exists already
        }
        s.services.auth.roleGrantPermission({ name: role, perm } as never);
      };
    };
  }
  return async (c) => {
    const now = Number((await c.kv.range({ key: Buffer.from('k0') })).header?.revision ?? 1);
    const req = { revision: String(Math.max(1, now - 1 - rnd.int(4))) };
    await c.kv.compact(req);
    return (s) => s.services.kv.compact(req);
  };
}

/** Runs `n` random requests one at a time; a refused one (a compacted revision...) changed nothing there either. */
async function work(c: EtcdGrpcClient, rnd: SimRandom, leases: string[], refs: readonly EtcdServer[], n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    let applyTo: ((s: EtcdServer) => void) | undefined;
    try {
      applyTo = await randomRequest(rnd, leases)(c);
    } catch {
      continue;
    }
    for (const s of refs) applyTo(s);
  }
}

test('a member SIGKILLed mid-workload, SIGTERMed and SIGINTed serves, each time it is started again, all it answered', { timeout: 120_000 }, async () => {
  const seed = Number(process.env['ETCDSIM_SEED'] ?? freshSeed());
  const rnd = new SimRandom(seed);
  const base = mkdtempSync(join(tmpdir(), 'etcdsim-datadir-'));
  const dir = join(base, 'data');
  const port = await freePort();
  const fresh = (): EtcdServer => new EtcdServer({ clock: new VirtualClock(), seed: 1 });
  // Without and with the request that was in flight when the process was killed.
  let refs = [fresh(), fresh()];
  const leases: string[] = [];
  let m = await start('etcdsim', dir, port);
  const why = `seed ${seed} (replay: ETCDSIM_SEED=${seed} node --import tsx --test test/cli/etcd_data_dir.test.ts)`;
  try {
    let c = connectEtcd(`127.0.0.1:${port}`);
    await work(c, rnd, leases, refs, 40);
    // A request in flight: the kill comes as soon as it is written, answered or not.
    const inFlight = { key: Buffer.from('inflight'), value: Buffer.from('maybe') };
    const sent = c.kv.put(inFlight).catch(() => undefined);
    m.child.kill('SIGKILL');
    await m.exited;
    await sent;
    c.close();
    refs[1]!.services.kv.put(inFlight);
    m = await start('etcdsim', dir, port);
    c = connectEtcd(`127.0.0.1:${port}`);
    const served = await dump(servedApi(c));
    const candidates = [await dump(referenceApi(refs[0]!)), await dump(referenceApi(refs[1]!))];
    assert.ok(candidates.some((x) => JSON.stringify(x) === JSON.stringify(served)), `after SIGKILL, ${why}:\n${JSON.stringify(served)}\nwanted one of\n${candidates.map((x) => JSON.stringify(x)).join('\n')}`);
    const kept = refs[candidates.findIndex((x) => JSON.stringify(x) === JSON.stringify(served))]!;
    refs = [kept];
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      await work(c, rnd, leases, refs, 25);
      c.close();
      m.child.kill(signal);
      assert.equal(await m.exited, 0);
      m = await start('etcdsim', dir, port);
      assert.match(m.stderr(), /already initialized as member before/);
      c = connectEtcd(`127.0.0.1:${port}`);
      assert.deepEqual(await dump(servedApi(c)), await dump(referenceApi(kept)), `after ${signal}, ${why}`);
    }
    // Users' passwords (hashed again when their entries were applied again) still authenticate.
    const users = kept.services.auth.userList({}).users;
    await c.auth.userAdd({ name: 'root', password: 'rootpw' });
    await c.auth.userGrantRole({ user: 'root', role: 'root' });
    await c.auth.authEnable({});
    for (const user of users) {
      assert.ok((await c.auth.authenticate({ name: user, password: `p-${user}` })).token !== '', user);
    }
    c.close();
  } finally {
    m.child.kill('SIGKILL');
    await m.exited;
    rmSync(base, { recursive: true, force: true });
  }
});

/** The exit code and the critical lines (time stamps off) of a member started on `dir`, which must fail. */
async function failure(which: 'etcdsim' | 'etcd', dir: string): Promise<{ code: number | null; lines: string[] }> {
  const m = await start(which, dir, await freePort());
  const guard = setTimeout(() => m.child.kill('SIGKILL'), 20_000);
  const code = await m.exited;
  clearTimeout(guard);
  const lines = m.stderr().split('\n').map((l) => l.replace(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} /, '')).filter((l) => /^C \| |^panic: |repair/.test(l));
  return { code, lines: lines.map((l) => l.replace(dir, 'DIR')) };
}

test("a data dir etcd 3.4.23 wrote opens here; one it cannot read stops etcdsim as it stops etcd: a changed WAL byte, a db that is not bbolt", { skip: requireCommand('etcd'), timeout: 120_000 }, async () => {
  const base = mkdtempSync(join(tmpdir(), 'etcdsim-corrupt-'));
  try {
    // A data dir as etcd writes it, with a few keys.
    const made = join(base, 'made');
    const m = await start('etcd', made, await freePort());
    const c = connectEtcd(`127.0.0.1:${m.port}`);
    for (const k of ['a', 'b', 'c']) await c.kv.put({ key: Buffer.from(k), value: Buffer.from('v'.repeat(40)) });
    c.close();
    m.child.kill('SIGKILL');
    await m.exited;
    // Intact, it opens here with its keys: from its db and WAL, and from its WAL alone (etcd's entries applied).
    for (const dbToo of [true, false]) {
      const d = join(base, `intact-${dbToo}`);
      cpSync(made, d, { recursive: true });
      if (!dbToo) rmSync(join(d, 'member', 'snap', 'db'));
      const sim = await start('etcdsim', d, await freePort());
      const sc = connectEtcd(`127.0.0.1:${sim.port}`);
      const r = await sc.kv.range({ key: Buffer.from('a'), range_end: Buffer.from('d') });
      sc.close();
      sim.child.kill('SIGKILL');
      await sim.exited;
      assert.deepEqual(r.kvs.map((kv) => [text(kv.key), Number(kv.mod_revision)]), [['a', 2], ['b', 3], ['c', 4]], `db kept: ${dbToo}`);
    }
    const walFile = (d: string): string => join(d, 'member', 'wal', readdirSync(join(d, 'member', 'wal')).find((n) => n.endsWith('.wal'))!);
    const variants: Record<string, (d: string) => void> = {
      'changed WAL byte': (d) => {
        const b = readFileSync(walFile(d));
        const at = b.indexOf('v'.repeat(40)) + 3;
        b[at] = b[at]! ^ 1;
        writeFileSync(walFile(d), b);
      },
      'db not bbolt': (d) => {
        const p = join(d, 'member', 'snap', 'db');
        const b = readFileSync(p);
        b.fill(0x5a, 0, 16384);
        writeFileSync(p, b);
      },
    };
    for (const [name, corrupt] of Object.entries(variants)) {
      const got: Record<string, { code: number | null; lines: string[] }> = {};
      for (const which of ['etcd', 'etcdsim'] as const) {
        const d = join(base, `${which}-${name.replace(/ /g, '-')}`);
        cpSync(made, d, { recursive: true });
        corrupt(d);
        got[which] = await failure(which, d);
        // Nothing was changed on the way out.
        if (which === 'etcdsim') assert.equal(statSync(walFile(d)).size, statSync(walFile(join(base, `etcd-${name.replace(/ /g, '-')}`))).size);
      }
      assert.ok(got['etcd']!.lines.length > 0, name);
      assert.deepEqual(got['etcdsim'], { code: got['etcd']!.code, lines: got['etcd']!.lines.slice(0, 2) }, name);
    }
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test("a real etcd's snapshot, restored by etcdctl snapshot restore, is served with its keys, hashes and users", { skip: requireCommands(['etcdctl']), timeout: 60_000 }, async () => {
  const base = mkdtempSync(join(tmpdir(), 'etcdsim-restored-'));
  const port = await freePort();
  const dir = join(base, 'restored');
  execFileSync('etcdctl', ['snapshot', 'restore', resolve('test/snapshot/fixtures/etcd-3.4.23-small.db'), '--data-dir', dir, '--name', 'n1', '--initial-cluster', `n1=http://127.0.0.1:${port + 1}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${port + 1}`], {
    env: { ...process.env, ETCDCTL_API: '3' },
    stdio: 'pipe',
  });
  const expected = JSON.parse(readFileSync('test/snapshot/fixtures/etcd-3.4.23-small.expected.json', 'utf8')) as { hashKV: number; hashKVAt6: number; revision: number; lease: string };
  const m = await start('etcdsim', dir, port);
  try {
    assert.match(m.stderr(), /restarting member [0-9a-f]+ in cluster [0-9a-f]+ at commit index 1\b/);
    const ctl = (...args: string[]): string =>
      execFileSync('etcdctl', [`--endpoints=127.0.0.1:${port}`, '--user', 'root:rootpw', ...args], { env: { ...process.env, ETCDCTL_API: '3' }, encoding: 'utf8' });
    const hash = (rev: string): number => (JSON.parse(ctl('endpoint', 'hashkv', '--rev', rev, '-w', 'json')) as Array<{ HashKV: { hash: number } }>)[0]!.HashKV.hash;
    assert.equal(hash('0'), expected.hashKV);
    assert.equal(hash('6'), expected.hashKVAt6);
    assert.match(ctl('lease', 'list'), new RegExp(expected.lease));
    assert.match(execFileSync('etcdctl', [`--endpoints=127.0.0.1:${port}`, '--user', 'alice:alicepw', 'get', 'a'], { env: { ...process.env, ETCDCTL_API: '3' }, encoding: 'utf8' }), /^a\n/);
  } finally {
    m.child.kill('SIGKILL');
    await m.exited;
    rmSync(base, { recursive: true, force: true });
  }
});

for (const which of ['etcd', 'etcdsim'] as const) {
  test(`${which}: a member SIGKILLed keeps its membership (a learner added), and its leases start their TTL anew on restart`, { skip: which === 'etcd' ? requireCommand('etcd') : false, timeout: 60_000 }, async () => {
    const base = mkdtempSync(join(tmpdir(), 'etcdsim-kept-members-'));
    const dir = join(base, 'data');
    const port = await freePort();
    let m = await start(which, dir, port);
    try {
      let c = connectEtcd(`127.0.0.1:${port}`);
      const lease = (await c.lease.leaseGrant({ ID: '0', TTL: '60' })).ID;
      const added = await c.cluster.memberAdd({ peerURLs: ['http://127.0.0.1:1'], isLearner: true });
      const listed = (r: { members?: Array<{ ID?: unknown; name?: string; peerURLs?: string[]; isLearner?: boolean }> | null }): string[] =>
        (r.members ?? []).map((x) => `${String(x.ID)} ${x.name} ${(x.peerURLs ?? []).join()} ${x.isLearner === true}`).sort();
      const members = listed(await c.cluster.memberList({}));
      assert.equal(members.length, 2);
      const index = Number((await c.maintenance.status({})).raftIndex);
      // The lease has run a while: its remaining TTL is below the granted one.
      for (;;) if (Number((await c.lease.leaseTimeToLive({ ID: lease })).TTL) < 59) break;
      c.close();
      m.child.kill('SIGKILL');
      await m.exited;
      const restartedAt = hostNow();
      m = await start(which, dir, port);
      c = connectEtcd(`127.0.0.1:${port}`);
      // etcd keeps the member in its WAL (a conf change) and its db's members bucket: listed as before.
      assert.deepEqual(listed(await c.cluster.memberList({})), members);
      assert.ok(members.some((x) => x.startsWith(`${String(added.member?.ID)} `)));
      // Two entries more: the new term's empty entry and the published attributes.
      assert.equal(Number((await c.maintenance.status({})).raftIndex), index + 2);
      // etcd 3.4 (no lease checkpoints): every lease counts its granted TTL again, from the restart.
      const ttl = await c.lease.leaseTimeToLive({ ID: lease });
      assert.equal(ttl.grantedTTL, '60');
      // (It had less than 59 s left before the kill; the bound allows for a slow restart, not for no reset.)
      const since = Math.ceil((hostNow() - restartedAt) / 1000);
      assert.ok(Number(ttl.TTL) >= Math.min(59, 60 - since) && Number(ttl.TTL) <= 60, `remaining ${ttl.TTL}, ${since} s after the restart began`);
      c.close();
    } finally {
      m.child.kill('SIGKILL');
      await m.exited;
      rmSync(base, { recursive: true, force: true });
    }
  });
}

test('etcdsim: a member killed after a membership change reached its WAL, before its db, applies the change again on restart (etcd replays its WAL)', { timeout: 60_000 }, async () => {
  const base = mkdtempSync(join(tmpdir(), 'etcdsim-conf-crash-'));
  const dir = join(base, 'data');
  const port = await freePort();
  // ETCDSIM_TEST_CRASH: etcdsim's hook, a SIGKILL of its own once the conf change is synced in the WAL.
  let m = await start('etcdsim', dir, port, { ETCDSIM_TEST_CRASH: 'conf-change-logged' });
  try {
    let c = connectEtcd(`127.0.0.1:${port}`, { deadlineMs: 5000 });
    await c.kv.put({ key: Buffer.from('a'), value: Buffer.from('1') });
    const index = Number((await c.maintenance.status({})).raftIndex);
    await assert.rejects(c.cluster.memberAdd({ peerURLs: ['http://127.0.0.1:1'], isLearner: true }));
    assert.equal(await m.exited, null, 'killed by its signal');
    c.close();
    m = await start('etcdsim', dir, port);
    c = connectEtcd(`127.0.0.1:${port}`, { deadlineMs: 5000 });
    // The learner was never answered, yet the WAL holds it: listed, as etcd lists a change its WAL replayed.
    const members = (await c.cluster.memberList({})).members ?? [];
    assert.deepEqual(members.map((x) => `${(x.peerURLs ?? []).join()} ${x.isLearner === true}`).sort(), ['http://127.0.0.1:1 true', `http://127.0.0.1:${port + 1} false`].sort());
    // Its entry, then the restart's two (the new term's empty entry, the published attributes).
    assert.equal(Number((await c.maintenance.status({})).raftIndex), index + 3);
    assert.equal(text((await c.kv.range({ key: Buffer.from('a') })).kvs?.[0]?.value ?? new Uint8Array(0)), '1');
    c.close();
    // Folded into the db by that restart: a restart after a clean stop lists it too.
    m.child.kill('SIGTERM');
    await m.exited;
    m = await start('etcdsim', dir, port);
    c = connectEtcd(`127.0.0.1:${port}`, { deadlineMs: 5000 });
    assert.equal(((await c.cluster.memberList({})).members ?? []).length, 2);
    c.close();
  } finally {
    m.child.kill('SIGKILL');
    await m.exited;
    rmSync(base, { recursive: true, force: true });
  }
});
