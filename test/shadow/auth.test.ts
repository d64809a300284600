/**
 * The shadow in front of a real etcd 3.4.23 whose auth is on before the shadow starts (src/shadow/own_auth.ts).
 * etcd then refuses the shadow's own calls without a token — its seeding Snapshot first, which only the root
 * role may take — so the shadow is given a user of its own (`--user NAME:PASSWORD`, etcdctl's flag), and
 * without one it refuses to start, naming the flag. etcd runs with --auth-token-ttl=1: a simple token unused
 * for a second expires, so the shadow must authenticate again when etcd answers "invalid auth token" — the
 * wait for that expiry is etcd's own timer, observed with spare tokens, never a fixed sleep. --bcrypt-cost=4
 * keeps each Authenticate cheap.
 */
import { after, before, test } from 'node:test';
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { connectEtcd, type EtcdGrpcClient } from '../../src/grpc/client.js';
import type * as M from '../../src/server/messages.js';
import { runCli } from '../../src/cli/program.js';
import { requireCommands } from '../support/prerequisites.js';
import { ctl, ctlOk, spawnShadow, startRig, summary, watchUntil, type ShadowRig } from './helpers.js';

const skip = requireCommands(['etcd', 'etcdctl']);
/** A terminal for the prompt's test: util-linux's script(1) runs the shadow on a pseudo-terminal. */
const noTerminal = skip !== false ? skip : requireCommands(['script']);
const ROOT = { name: 'root', password: 'rootpw' };
const ETCD_FLAGS = ['--auth-token-ttl=1', '--bcrypt-cost=4'];

/** The etcd's state before the shadow: data, a root and an application user, auth on, more data written with a token. */
async function authOn(address: string): Promise<void> {
  const c = connectEtcd(address);
  try {
    await c.kv.put({ key: Buffer.from('/app/before'), value: Buffer.from('1') });
    await c.auth.userAdd({ name: 'root', password: 'rootpw', options: { no_password: false } });
    await c.auth.roleAdd({ name: 'root' });
    await c.auth.userGrantRole({ user: 'root', role: 'root' });
    await c.auth.userAdd({ name: 'app', password: 'apppw', options: { no_password: false } });
    await c.auth.roleAdd({ name: 'app' });
    await c.auth.roleGrantPermission({ name: 'app', perm: { permType: 'READWRITE', key: Buffer.from('/app/'), range_end: Buffer.from('/app0') } });
    await c.auth.userGrantRole({ user: 'app', role: 'app' });
    await c.auth.authEnable({});
    const root = { token: (await c.auth.authenticate(ROOT)).token };
    await c.kv.put({ key: Buffer.from('/app/before'), value: Buffer.from('2') }, root);
    await c.kv.put({ key: Buffer.from('/other'), value: Buffer.from('x') }, root);
  } finally {
    c.close();
  }
}

let rig: ShadowRig;
before(async () => {
  if (skip === false) rig = await startRig({ user: ROOT, compactionProbeMs: 0, authTokenTtlMs: 1000 }, (etcd) => authOn(etcd.address), ETCD_FLAGS);
});
after(async () => {
  await rig?.close();
});

/** `etcdsim shadow ARGS` in this process: its exit code and its stdout and stderr lines. */
async function shadowCli(args: readonly string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(['shadow', '--listen-client-urls', 'http://127.0.0.1:0', ...args], { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out, err };
}

test('an etcd with auth on: without --user the shadow refuses to start at once, naming the flag; a user without root, or without a password, likewise', { skip }, async () => {
  const none = await shadowCli(['--etcd', rig.etcd.address]);
  assert.equal(none.code, 2, [...none.out, ...none.err].join('\n'));
  assert.deepEqual(none.out, []);
  assert.deepEqual(none.err, [
    `etcdsim shadow: cannot use the etcd at ${rig.etcd.address}: the etcd's auth is enabled and the shadow has no user: give it one with --user NAME:PASSWORD (a user with the root role: etcd's Snapshot, which seeds the simulator, needs it)`,
  ]);
  const app = await shadowCli(['--etcd', rig.etcd.address, '--user', 'app', '--password', 'apppw']);
  assert.equal(app.code, 2, app.err.join('\n'));
  assert.match(app.err.join('\n'), /the user app may not take etcd's snapshot, which seeds the simulator: --user must name a user with the root role/);
  const wrong = await shadowCli(['--etcd', rig.etcd.address, '--user', 'root:nope']);
  assert.equal(wrong.code, 2, wrong.err.join('\n'));
  assert.match(wrong.err.join('\n'), /--user root: etcdserver: authentication failed, invalid user ID or password/);
  const noPassword = await shadowCli(['--etcd', rig.etcd.address, '--user', 'root']);
  assert.deepEqual([noPassword.code, noPassword.err], [2, ['etcdsim shadow: --user root: no password (--user NAME:PASSWORD, --password PASSWORD, ETCDSIM_SHADOW_PASSWORD, or typed at the prompt on a terminal)']]);
});

test("etcdctl with --user through a shadow seeded from an etcd with auth on: every answer agrees with the simulator's", { skip }, async () => {
  const ep = rig.shadow.endpoint;
  const run = ctlOk(ep);
  const asRoot = ['--user', 'root:rootpw'];
  const asApp = ['--user', 'app', '--password', 'apppw'];
  // What etcd held before the shadow started, read through it: the simulator was seeded with it.
  assert.equal(await run([...asApp, 'get', '/app/before', '--print-value-only']), '2\n');
  assert.match((await ctl(ep, ['get', '/app/before'])).out, /user name is empty/);
  assert.match((await ctl(ep, [...asApp, 'get', '/other'])).out, /permission denied/);
  await run([...asApp, 'put', '/app/a', '1']);
  await run([...asApp, 'put', '/app/a', '2', '--prev-kv']);
  await run([...asApp, 'txn'], 'value("/app/a") = "2"\n\nput /app/t yes\n\nput /app/t no\n\n');
  assert.match(await watchUntil(ep, [...asApp, '/app/a', '--rev=2'], '/app/a\n2\n'), /^PUT\n\/app\/a\n1\nPUT\n\/app\/a\n2\n/);
  assert.equal(await run([...asRoot, 'get', '', '--from-key', '--keys-only']), '/app/a\n\n/app/before\n\n/app/t\n\n/other\n\n');
  assert.equal(await run([...asRoot, 'get', '/app/', '--prefix', '--keys-only', '--rev=5']), '/app/a\n\n/app/before\n\n');
  const lease = /lease ([0-9a-f]+) granted/.exec(await run([...asApp, 'lease', 'grant', '60']))![1]!;
  await run([...asApp, 'put', '/app/l', 'x', `--lease=${lease}`]);
  await run([...asRoot, 'lease', 'revoke', lease]);
  await run([...asApp, 'del', '/app/t']);
  await run([...asRoot, 'user', 'list']);
  await run([...asRoot, 'role', 'get', 'app']);
  await run([...asRoot, 'compact', '4']);
  assert.match((await ctl(ep, [...asApp, 'get', '/app/a', '--rev=3'])).out, /required revision has been compacted/);

  assert.equal(await rig.shadow.drained(), true, summary(rig));
  assert.deepEqual(rig.divergences, [], summary(rig));
  const r = rig.shadow.report;
  for (const rpc of ['Auth.Authenticate', 'KV.Put', 'KV.Range', 'KV.Txn', 'KV.DeleteRange', 'KV.Compact', 'Lease.LeaseGrant', 'Lease.LeaseRevoke', 'Auth.UserList', 'Auth.RoleGet', 'Watch.Watch']) {
    assert.ok((r.rpcs.get(rpc)?.compared ?? 0) > 0, `${rpc} compared\n${summary(rig)}`);
  }
  // Refused for want of a token, and for want of permission: compared too, not passed over.
  assert.equal(r.rpcs.get('KV.Range')?.notCompared.size ?? 0, 0, summary(rig));
});

/**
 * Resolves once a token last used now would have expired on etcd (--auth-token-ttl): `spares` tokens
 * taken together, one tried at a time (trying one renews only that one), until etcd refuses one.
 */
async function tokensExpired(direct: EtcdGrpcClient, spares = 30): Promise<void> {
  const tokens: string[] = [];
  for (let i = 0; i < spares; i++) tokens.push((await direct.auth.authenticate(ROOT)).token);
  for (const token of tokens) {
    await new Promise((r) => setTimeout(r, 250)); // etcd's token keeper runs once a second
    try {
      await direct.kv.range({ key: Buffer.from('/other') }, { token });
    } catch (err) {
      if ((err as { details?: string }).details === 'etcdserver: invalid auth token') return;
      throw err;
    }
  }
  throw new Error(`none of ${spares} tokens expired`);
}

test("the shadow's token expires on etcd (--auth-token-ttl) or is dropped with auth turned off: it authenticates again, and follows a compaction and a write beside it", { skip }, async () => {
  const direct = connectEtcd(rig.etcd.address);
  const app = connectEtcd(rig.shadow.endpoint);
  try {
    assert.equal(await rig.shadow.drained(), true, summary(rig));
    const before = rig.shadow.authentications();
    assert.ok(before >= 1, String(before));
    // The application's token, from an Authenticate through the shadow, and the shadow's own are unused from
    // here (no probe timer): etcd expires both.
    const stale = { token: (await app.auth.authenticate({ name: 'app', password: 'apppw' })).token };
    await tokensExpired(direct);
    // etcd refuses the application's expired token; the simulator, whose clock never moved, forgets it too.
    const refusedBefore = rig.shadow.report.rpcs.get('KV.Range')?.compared ?? 0;
    await assert.rejects(app.kv.range({ key: Buffer.from('/app/a') }, stale), /invalid auth token/);
    await assert.rejects(app.kv.put({ key: Buffer.from('/app/a'), value: Buffer.from('x') }, stale), /invalid auth token/);
    const root = { token: (await direct.auth.authenticate(ROOT)).token };
    // Beside the shadow: a write (its own watch, opened with the token that expired, still brings it) and a compaction.
    const put = await direct.kv.put({ key: Buffer.from('/app/beside'), value: Buffer.from('b') }, root);
    await direct.kv.compact({ revision: put.header.revision }, root);
    // Through it: a read below that compaction is refused by etcd; the shadow's probe, refused with its expired
    // token, authenticates again and finds the compaction.
    const as = { token: (await app.auth.authenticate({ name: 'app', password: 'apppw' })).token };
    await assert.rejects(app.kv.range({ key: Buffer.from('/app/a'), revision: String(Number(put.header.revision) - 1) }, as), /required revision has been compacted/);
    assert.equal(await rig.shadow.drained(), true, summary(rig));
    assert.equal(rig.shadow.authentications(), before + 1, summary(rig));
    assert.equal(rig.shadow.report.rpcs.get('KV.Range')?.compared, refusedBefore + 1, summary(rig));
    assert.equal(rig.shadow.retained().compactRevision, Number(put.header.revision), summary(rig));
    assert.equal((await app.kv.range({ key: Buffer.from('/app/beside') }, as)).kvs.length, 1);

    // Auth turned off through the shadow drops every token: etcd refuses the shadow's, and Authenticate is
    // refused while auth is off, so the shadow reads without one...
    const rootThrough = { token: (await app.auth.authenticate(ROOT)).token };
    await app.auth.authDisable({}, rootThrough);
    await app.kv.put({ key: Buffer.from('/open'), value: Buffer.from('1') });
    assert.equal(await rig.shadow.drained(), true, summary(rig));
    assert.equal(rig.shadow.authentications(), before + 1, summary(rig));
    // ... and once auth is on again, etcd refuses a read without a token: the shadow authenticates.
    await app.auth.authEnable({});
    await app.kv.put({ key: Buffer.from('/app/closed'), value: Buffer.from('1') }, { token: (await app.auth.authenticate({ name: 'app', password: 'apppw' })).token });
    assert.equal(await rig.shadow.drained(), true, summary(rig));
    assert.equal(rig.shadow.authentications(), before + 2, summary(rig));
  } finally {
    app.close();
    direct.close();
  }
  assert.deepEqual(rig.divergences, [], summary(rig));
});

test("a watch stream whose token etcd expired: etcd refuses its next watch, the simulator's stream is not asked it, and the stream's other watches compare on", { skip }, async () => {
  const direct = connectEtcd(rig.etcd.address);
  const app = connectEtcd(rig.shadow.endpoint);
  const appUser = { name: 'app', password: 'apppw' };
  const comparedBefore = rig.shadow.report.rpcs.get('Watch.Watch')?.compared ?? 0;
  const call = app.watch.watch({ token: (await app.auth.authenticate(appUser)).token });
  const got: M.WatchResponse[] = [];
  const until = async (what: string, done: () => boolean): Promise<void> => {
    for (let i = 0; i < 1000 && !done(); i++) await new Promise((r) => setTimeout(r, 10)); // etcd's answer on the stream
    assert.ok(done(), `${what}: ${JSON.stringify(got)}`);
  };
  call.onResponse((rs) => got.push(...rs));
  try {
    call.write({ create_request: { key: Buffer.from('/app/w1') } });
    await until('the first watch created', () => got.some((r) => r.created));
    await tokensExpired(direct);
    // The stream's token expired: etcd refuses a watch created on it now.
    call.write({ create_request: { key: Buffer.from('/app/w2') } });
    await until('the second watch refused', () => got.some((r) => r.canceled));
    assert.match(got.find((r) => r.canceled)!.cancel_reason, /invalid auth token/);
    // The first watch, created while the token was good, streams on.
    await app.kv.put({ key: Buffer.from('/app/w1'), value: Buffer.from('1') }, { token: (await app.auth.authenticate(appUser)).token });
    await until('the first watch streams', () => got.some((r) => r.events.length > 0));
    assert.equal(await rig.shadow.drained(), true, summary(rig));
  } finally {
    call.cancel();
    app.close();
    direct.close();
  }
  assert.deepEqual(rig.divergences, [], summary(rig));
  assert.equal(rig.shadow.unmatched(), 0, summary(rig));
  const w = rig.shadow.report.rpcs.get('Watch.Watch');
  // The first watch's creation and its event compared; the refused creation counted, not compared.
  assert.equal((w?.compared ?? 0) - comparedBefore, 2, summary(rig));
  assert.equal(w?.notCompared.get('a watch refused for a token etcd dropped'), 1, summary(rig));
});

test("many Authenticates through the shadow: the simulator holds the tokens etcd still holds, not one per Authenticate", { skip }, async () => {
  const direct = connectEtcd(rig.etcd.address);
  const app = connectEtcd(rig.shadow.endpoint);
  const appUser = { name: 'app', password: 'apppw' };
  const key = Buffer.from('/app/a');
  const PER_ROUND = 50;
  const before = rig.shadow.retained().tokens;
  let most = 0;
  try {
    for (let round = 0; round < 3; round++) {
      const tokens: string[] = [];
      for (let i = 0; i < PER_ROUND; i++) {
        const token = (await app.auth.authenticate(appUser)).token;
        await app.kv.range({ key }, { token });
        tokens.push(token);
        most = Math.max(most, rig.shadow.retained().tokens);
      }
      await tokensExpired(direct);
      if (round === 0) {
        // etcd refuses each now: the shadow drops each counterpart as etcd refuses it.
        const held = rig.shadow.retained().tokens;
        for (const token of tokens) await assert.rejects(app.kv.range({ key }, { token }), /invalid auth token/);
        assert.ok(rig.shadow.retained().tokens <= held - PER_ROUND, `${held} tokens before the refusals: ${JSON.stringify(rig.shadow.retained())}`);
      }
      // Unused (the other rounds; any older ones): dropped once etcd's TTL and the keeper's slack passed, at a
      // sweep — a use of another token, here.
      const token = (await app.auth.authenticate(appUser)).token;
      for (let i = 0; i < 100 && rig.shadow.retained().tokens > 2; i++) {
        await new Promise((r) => setTimeout(r, 100)); // the shadow's sweep is host time: observed, with a bound
        await app.kv.range({ key }, { token });
      }
      // Left: at most the shadow's own root token (it applies etcd's events as root) and the one just used.
      assert.ok(rig.shadow.retained().tokens <= 2, `round ${round}: ${JSON.stringify(rig.shadow.retained())}\n${summary(rig)}`);
    }
  } finally {
    app.close();
    direct.close();
  }
  // 150 Authenticates; the simulator never held more than one round's tokens besides those held before.
  assert.ok(most <= before + PER_ROUND + 2, `${most} tokens held at most (${before} before)`);
  assert.deepEqual(rig.divergences, [], summary(rig));
});

/** `etcdsim shadow ARGS` as a child process with `env` added, to its exit: code, stdout, stderr. */
function shadowExit(args: readonly string[], env: Record<string, string>): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['bin/etcdsim.js', 'shadow', '--listen-client-urls', 'http://127.0.0.1:0', ...args], { env: { ...process.env, ...env } }, (err, out, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : null, out, err: stderr });
    });
  });
}

test("the shadow's password out of its command line: ETCDSIM_SHADOW_USER and ETCDSIM_SHADOW_PASSWORD, as etcdctl's ETCDCTL_USER; a flag and its variable both given is refused", { skip }, async () => {
  for (const env of [{ ETCDSIM_SHADOW_USER: 'root:rootpw' }, { ETCDSIM_SHADOW_USER: 'root', ETCDSIM_SHADOW_PASSWORD: 'rootpw' }]) {
    const child = await spawnShadow(['--etcd', rig.etcd.address, '--listen-client-urls', 'http://127.0.0.1:0'], env);
    try {
      // What ps shows of it: no password.
      const argv = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0');
      assert.ok(argv.includes('shadow'), argv.join(' '));
      assert.ok(!argv.some((a) => a.includes('rootpw')), argv.join(' '));
      // It started from etcd's snapshot as root, and shadows an application's calls.
      assert.equal((await ctl(child.endpoint, ['--user', 'root:rootpw', 'get', '/other', '--print-value-only'])).out, 'x\n');
    } finally {
      assert.equal(await child.stop(), 0, child.err());
    }
    assert.match(child.out(), /^KV\.Range +1 +1 +0/m);
  }
  const both = await shadowExit(['--etcd', rig.etcd.address, '--user', 'root:rootpw'], { ETCDSIM_SHADOW_USER: 'root' });
  assert.deepEqual([both.code, both.err], [2, 'etcdsim shadow: conflicting environment variable "ETCDSIM_SHADOW_USER" is shadowed by corresponding command-line flag (either unset environment variable or disable flag)\n']);
  const onlyPassword = await shadowExit(['--etcd', rig.etcd.address], { ETCDSIM_SHADOW_PASSWORD: 'rootpw' });
  assert.deepEqual([onlyPassword.code, onlyPassword.err], [2, 'etcdsim shadow: --password needs --user NAME (or ETCDSIM_SHADOW_USER)\n']);
  // No password and no terminal to ask on: refused at once, naming the ways to give one.
  const noPassword = await shadowExit(['--etcd', rig.etcd.address], { ETCDSIM_SHADOW_USER: 'root' });
  assert.equal(noPassword.code, 2, noPassword.err);
  assert.match(noPassword.err, /--user root: no password \(.*ETCDSIM_SHADOW_PASSWORD, or typed at the prompt on a terminal\)/);
});

test('--user NAME on a terminal: the shadow asks for the password as etcdctl does, without echoing it', { skip: noTerminal }, async () => {
  // script(1) gives the shadow a pseudo-terminal; what is typed goes to it, what it writes (and echoes) comes back.
  // `exec`: script(1) runs the command through $SHELL -c, and a dash there (CI's /bin/sh) stays as the parent
  // and dies of the Ctrl-C itself (130) while the shadow, which handles it, prints its summary.
  const command = `exec ${process.execPath} bin/etcdsim.js shadow --etcd ${rig.etcd.address} --listen-client-urls http://127.0.0.1:0 --user root`;
  const child = spawn('script', ['-qfec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let seen = '';
  child.stdout.on('data', (d: Buffer) => (seen += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const saw = async (what: RegExp): Promise<void> => {
    for (let i = 0; i < 3000 && !what.test(seen); i++) await new Promise((r) => setTimeout(r, 10)); // the shadow's start
    assert.match(seen, what);
  };
  try {
    await saw(/Password: /);
    child.stdin.write('rootpw\r');
    const endpoint = /shadowing the etcd at \S+ on (127\.0\.0\.1:\d+)/;
    await saw(endpoint);
    assert.doesNotMatch(seen, /rootpw/);
    assert.equal((await ctl(endpoint.exec(seen)![1]!, ['--user', 'root:rootpw', 'get', '/other', '--print-value-only'])).out, 'x\n');
    // Ctrl-C on the terminal stops it, with the summary.
    child.stdin.write('\x03');
    assert.equal(await exited, 0, seen);
    assert.match(seen, /KV\.Range +1 +1 +0/);
  } finally {
    child.kill();
  }
});

test('--user NAME on a terminal: Ctrl-C at the prompt gives up, and the shadow stops at once as without a password', { skip: noTerminal }, async () => {
  const command = `exec ${process.execPath} bin/etcdsim.js shadow --etcd ${rig.etcd.address} --listen-client-urls http://127.0.0.1:0 --user root`;
  const child = spawn('script', ['-qfec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let seen = '';
  child.stdout.on('data', (d: Buffer) => (seen += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    for (let i = 0; i < 3000 && !/Password: /.test(seen); i++) await new Promise((r) => setTimeout(r, 10)); // the shadow's start
    assert.match(seen, /Password: /);
    child.stdin.write('roo\x03');
    assert.equal(await exited, 2, seen);
    assert.match(seen, /--user root: no password \(/);
    assert.doesNotMatch(seen, /shadowing the etcd/);
  } finally {
    child.kill();
  }
});
