/**
 * Passwords travel in snapshots as etcd stores them, bcrypt hashes (src/auth/password.ts,
 * src/snapshot/member.ts): the simulator writes real bcrypt at the member's cost, so a real etcd restored
 * from its snapshot authenticates its users; a real etcd's users authenticate in the simulator; a hash
 * bcrypt cannot read loads as etcd restores it (that user's passwords are all wrong), byte for byte.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createEtcdSim } from '../../src/client/create.js';
import { readEtcdSnapshot, writeEtcdSnapshot, type EtcdBackend } from '../../src/snapshot/index.js';
import { PasswordHasher, parseBcryptHash } from '../../src/auth/password.js';
import { SimRandom } from '../../src/sim/index.js';
import { requireCommands } from '../support/prerequisites.js';
import { ctlOk, etcdctl, restoreAndStart, scratchDir } from './helpers.js';

const skip = requireCommands(['etcd', 'etcdctl']);
const fixture = readFileSync(new URL('./fixtures/etcd-3.4.23-small.db', import.meta.url));
const AUTH_FAILED = /authentication failed, invalid user ID or password/;
const text = (b: Uint8Array): string => Buffer.from(b).toString('latin1');

/** A simulator with auth enabled: root and alice (role reader on many/), passwords rootpw and alicepw. */
function simWithUsers(authHashCost?: number): ReturnType<typeof createEtcdSim> {
  return createEtcdSim({
    time: 'virtual',
    etcdVersion: '3.4',
    seed: 7,
    ...(authHashCost === undefined ? {} : { authHashCost }),
    auth: {
      roles: [{ name: 'reader', permissions: [{ permType: 'READ', key: 'many/', rangeEnd: 'many0' }] }],
      users: [
        { name: 'root', password: 'rootpw', roles: ['root'] },
        { name: 'alice', password: 'alicepw', roles: ['reader'] },
      ],
      enable: true,
    },
  });
}

const authenticate = (sim: ReturnType<typeof createEtcdSim>, name: string, password: string): string => sim.services.auth.authenticate({ name, password }).token;

test('a real etcd 3.4.23 snapshot: its users authenticate in the simulator with their passwords (bcrypt, cost 10), others fail', () => {
  const sim = createEtcdSim({ time: 'virtual', etcdVersion: '3.4', fromSnapshot: fixture });
  try {
    assert.ok(authenticate(sim, 'alice', 'alicepw').length > 0);
    assert.ok(authenticate(sim, 'root', 'rootpw').length > 0);
    assert.throws(() => authenticate(sim, 'alice', 'rootpw'), AUTH_FAILED);
    assert.throws(() => authenticate(sim, 'alice', ''), AUTH_FAILED);
    // Saved again, the hashes are the ones etcd wrote, byte for byte.
    const again = readEtcdSnapshot(sim.server.etcdSnapshot());
    assert.deepEqual(again.users.map((u) => [u.name, text(u.password)]), readEtcdSnapshot(fixture).users.map((u) => [u.name, text(u.password)]));
  } finally {
    sim.close();
  }
});

test('the simulator writes bcrypt $2a$ hashes at its cost (default 4, bcrypt\'s fastest; authHashCost as etcd\'s --bcrypt-cost), same seed same hashes', () => {
  for (const [cost, prefix] of [[undefined, '$2a$04$'], [10, '$2a$10$']] as const) {
    const sim = simWithUsers(cost);
    try {
      const users = readEtcdSnapshot(sim.server.etcdSnapshot()).users;
      for (const u of users) {
        assert.ok(text(u.password).startsWith(prefix), `${u.name}: ${text(u.password)}`);
        assert.equal(u.password.length, 60);
      }
      const twin = simWithUsers(cost);
      assert.deepEqual(readEtcdSnapshot(twin.server.etcdSnapshot()).users, users, 'the salt comes from the seed');
      twin.close();
      // Loaded into another simulator: the same passwords work.
      const loaded = createEtcdSim({ time: 'virtual', fromSnapshot: sim.server.etcdSnapshot() });
      assert.ok(authenticate(loaded, 'alice', 'alicepw').length > 0);
      assert.throws(() => authenticate(loaded, 'alice', 'nope'), AUTH_FAILED);
      loaded.close();
    } finally {
      sim.close();
    }
  }
  assert.throws(() => simWithUsers(3), RangeError);
  assert.throws(() => simWithUsers(32), RangeError);
});

/** The fixture with alice's stored hash replaced by `bytes`. */
function withAliceHash(bytes: Uint8Array): Uint8Array {
  const b = readEtcdSnapshot(fixture);
  const users = b.users.map((u) => (u.name === 'alice' ? { ...u, password: bytes } : u));
  return writeEtcdSnapshot({ ...b, users } satisfies EtcdBackend);
}

const real = text(readEtcdSnapshot(fixture).users.find((u) => u.name === 'alice')!.password);
const BAD_HASHES: ReadonlyArray<[string, Uint8Array]> = [
  ['empty', new Uint8Array(0)],
  ['not a hash', Buffer.from('alicepw')],
  ['truncated', Buffer.from(real.slice(0, 50))],
  ['a newer version', Buffer.from(`$3${real.slice(2)}`)],
  ['a cost past 31', Buffer.from(`$2a$32${real.slice(6)}`)],
  ['a cost below 4', Buffer.from(`$2a$03${real.slice(6)}`)],
  ['a salt outside bcrypt base64', Buffer.from(`${real.slice(0, 7)}!!${real.slice(9)}`)],
  ['the hash part cut short', Buffer.from(real.slice(0, 59))],
  ['bytes that are no UTF-8', Uint8Array.from([0xff, 0xfe, ...Buffer.from(real.slice(2))])],
];

test('hashes bcrypt cannot read load as etcd restores them: that user never authenticates, nothing throws, the bytes are kept', () => {
  for (const [what, bytes] of BAD_HASHES) {
    const sim = createEtcdSim({ time: 'virtual', etcdVersion: '3.4', fromSnapshot: withAliceHash(bytes) });
    try {
      assert.throws(() => authenticate(sim, 'alice', 'alicepw'), AUTH_FAILED, what);
      assert.ok(authenticate(sim, 'root', 'rootpw').length > 0, `${what}: other users are unaffected`);
      const kept = readEtcdSnapshot(sim.server.etcdSnapshot()).users.find((u) => u.name === 'alice')!;
      assert.deepEqual(Uint8Array.from(kept.password), Uint8Array.from(bytes), `${what}: saved again unchanged`);
    } finally {
      sim.close();
    }
  }
  // The minor letter and a two-character cost are read as x/crypto reads them.
  const hasher = new PasswordHasher(new SimRandom(1));
  const h = hasher.hash('pw');
  for (const variant of [h, h.replace('$2a$', '$2b$'), h.replace('$2a$', '$2y$'), h.replace('$2a$', '$2$'), h.replace('$04$', '$+4$')]) {
    assert.equal(hasher.verify('pw', variant), true, variant);
    assert.equal(hasher.verify('px', variant), false, variant);
  }
  assert.equal(parseBcryptHash('$2a$10$abc'), 'hash too short');
  assert.equal(parseBcryptHash(`$2a$99${h.slice(6)}`), 'cost 99 is outside 4..31');
});

test('simulator → snapshot → etcdctl snapshot restore → a real etcd 3.4.23 authenticates its users with their passwords', { skip, timeout: 120_000 }, async () => {
  const scratch = scratchDir();
  const sim = simWithUsers();
  try {
    sim.services.kv.put({ key: Buffer.from('many/1'), value: Buffer.from('v') }, { token: authenticate(sim, 'root', 'rootpw') });
    const file = join(scratch.dir, 'sim.db');
    writeFileSync(file, sim.server.etcdSnapshot());
    const restored = await restoreAndStart(file, join(scratch.dir, 'restored'));
    try {
      assert.match(await ctlOk(['--user=alice:alicepw', 'get', 'many/1'], restored.address), /many\/1\nv\n/);
      assert.match(await ctlOk(['--user=root:rootpw', 'user', 'list'], restored.address), /^alice\nroot\n$/);
      const wrong = await etcdctl(['--user=alice:rootpw', 'get', 'many/1'], restored.address);
      assert.notEqual(wrong.code, 0);
      assert.match(wrong.stderr, AUTH_FAILED);
    } finally {
      await restored.stop();
    }
  } finally {
    sim.close();
    scratch.cleanup();
  }
});

test('a hash bcrypt cannot read, restored into a real etcd 3.4.23: it refuses that user as the simulator does', { skip, timeout: 120_000 }, async () => {
  const scratch = scratchDir();
  try {
    const file = join(scratch.dir, 'bad.db');
    writeFileSync(file, withAliceHash(Buffer.from(real.slice(0, 50))));
    const restored = await restoreAndStart(file, join(scratch.dir, 'restored'));
    try {
      const denied = await etcdctl(['--user=alice:alicepw', 'get', 'a'], restored.address);
      assert.notEqual(denied.code, 0);
      assert.match(denied.stderr, AUTH_FAILED);
      assert.match(await ctlOk(['--user=root:rootpw', 'user', 'list'], restored.address), /^alice\nroot\n$/);
    } finally {
      await restored.stop();
    }
  } finally {
    scratch.cleanup();
  }
});
