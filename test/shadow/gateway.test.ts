/**
 * etcd's JSON gateway through the shadow, against etcd 3.4.23: the requests of etcd's own v3_curl e2e tests
 * (put and range, txn, watch, lease grant / revoke / leases / keep-alive, auth with a token, election and
 * lock) as curl sends them — JSON bodies on HTTP/1.1 POSTs — each answered by etcd (byte for byte what etcd
 * answers directly) and compared with the simulator's answer to the same call, with no divergence. A
 * simulator run as 3.6 is caught at the compaction-revision tombstone in a watch over the gateway, as over
 * gRPC (planted.test.ts).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as http from 'node:http';
import { Buffer } from 'node:buffer';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseScenario } from '../../src/shadow/index.js';
import { requireCommands } from '../support/prerequisites.js';
import { startRig, summary, type ShadowRig } from './helpers.js';

const skip = requireCommands(['etcd']);
let rig: ShadowRig;
before(async () => {
  if (skip === false) rig = await startRig();
});
after(async () => {
  await rig?.close();
});

const b64 = (s: string): string => Buffer.from(s).toString('base64');

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly headers: http.IncomingHttpHeaders;
}

/** `curl -X POST -d BODY http://EP/PATH` (with extra headers). */
function post(ep: string, path: string, body: unknown, headers: http.OutgoingHttpHeaders = {}): Promise<Answer> {
  const [host, port] = ep.split(':');
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port: Number(port), path, method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, agent: false }, (res) => {
      let out = '';
      res.on('data', (d: Buffer) => (out += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: out, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(text);
  });
}

/** A streaming POST (watch, keep-alive): the body's messages are written, the answer's lines read until `until` holds. */
function stream(ep: string, path: string, bodies: readonly unknown[], until: (lines: readonly string[]) => boolean): Promise<string[]> {
  const [host, port] = ep.split(':');
  return new Promise((resolve, reject) => {
    const lines: string[] = [];
    const req = http.request({ host, port: Number(port), path, method: 'POST', agent: false }, (res) => {
      let pending = '';
      res.on('data', (d: Buffer) => {
        pending += d.toString();
        let nl: number;
        while ((nl = pending.indexOf('\n')) >= 0) {
          lines.push(pending.slice(0, nl));
          pending = pending.slice(nl + 1);
        }
        if (until(lines)) {
          resolve(lines);
          req.destroy();
        }
      });
      res.on('end', () => resolve(lines));
    });
    req.on('error', (err) => (lines.length > 0 ? resolve(lines) : reject(err)));
    for (const b of bodies) req.write(JSON.stringify(b));
  });
}

async function ok(ep: string, path: string, body: unknown, headers?: http.OutgoingHttpHeaders): Promise<Record<string, unknown>> {
  const a = await post(ep, path, body, headers);
  assert.equal(a.status, 200, `${path}: ${a.status} ${a.body}`);
  return JSON.parse(a.body) as Record<string, unknown>;
}

test("the v3_curl requests through the shadow: etcd's answers, byte for byte, and no divergence", { skip }, async () => {
  const ep = rig.shadow.endpoint;
  const direct = rig.etcd.address;
  // v3_curl's put and get, on /v3/ and on /v3beta/ (etcd 3.4 serves both).
  await ok(ep, '/v3/kv/put', { key: b64('foo'), value: b64('bar') });
  await ok(ep, '/v3beta/kv/put', { key: b64('foo2'), value: b64('bar2'), prev_kv: true });
  const read = { key: b64('foo'), range_end: b64('foo3'), revision: 3 };
  const through = await post(ep, '/v3/kv/range', read);
  const straight = await post(direct, '/v3/kv/range', read);
  assert.equal(through.body, straight.body);
  assert.equal(through.headers['content-type'], straight.headers['content-type']);
  assert.equal(through.headers['grpc-metadata-content-type'], 'application/grpc');
  assert.match(through.body, /"count":"2"/);
  // txn: a compare that holds, its put; one that fails, its range.
  const txn = { compare: [{ key: b64('foo'), result: 'EQUAL', target: 'VALUE', value: b64('bar') }], success: [{ request_put: { key: b64('foo'), value: b64('baz') } }], failure: [{ request_range: { key: b64('foo') } }] };
  assert.equal((await ok(ep, '/v3/kv/txn', txn))['succeeded'], true);
  assert.equal((await ok(ep, '/v3/kv/txn', txn))['succeeded'], undefined);
  await ok(ep, '/v3/kv/deleterange', { key: b64('foo2') });
  // Errors are compared as gRPC statuses: a txn with a duplicate key, a future revision, a compacted one.
  assert.equal((await post(ep, '/v3/kv/txn', { success: [{ request_put: { key: b64('d') } }, { request_put: { key: b64('d') } }] })).status, 400);
  assert.equal((await post(ep, '/v3/kv/range', { key: b64('foo'), revision: 1000 })).status, 400);
  await ok(ep, '/v3/kv/compaction', { revision: 3 });
  assert.match((await post(ep, '/v3/kv/range', { key: b64('foo'), revision: 2 })).body, /required revision has been compacted/);
  // A body that is not JSON: etcd's 400, passed on, not compared.
  assert.equal((await post(ep, '/v3/kv/put', '{"key":')).status, 400);

  // Watch from a past revision (v3_curl's watch), and a put it sees.
  const put = await ok(ep, '/v3/kv/put', { key: b64('w'), value: b64('1') });
  const rev = Number((put['header'] as { revision: string }).revision);
  const lines = await stream(ep, '/v3/watch', [{ create_request: { key: b64('w'), start_revision: rev, prev_kv: true } }], (ls) => ls.some((l) => l.includes('"events"')));
  assert.match(lines.join('\n'), /"created":true/);
  assert.match(lines.join('\n'), new RegExp(`"mod_revision":"${rev}"`));

  // Leases: grant, keep-alive (a stream), time-to-live with keys, leases, revoke.
  const grant = await ok(ep, '/v3/lease/grant', { TTL: 60 });
  const id = String(grant['ID']);
  await ok(ep, '/v3/kv/put', { key: b64('leased'), value: b64('x'), lease: id });
  const ka = await stream(ep, '/v3/lease/keepalive', [{ ID: id }], (ls) => ls.length > 0);
  assert.match(ka[0]!, /"TTL":"60"/);
  assert.match(JSON.stringify(await ok(ep, '/v3/kv/lease/timetolive', { ID: id, keys: true })), /"keys":\["bGVhc2Vk"\]/);
  await ok(ep, '/v3/lease/leases', {});
  await ok(ep, '/v3/kv/lease/revoke', { ID: id });
  assert.equal((await post(ep, '/v3/lease/revoke', { ID: id })).status, 404);

  // Election: campaign with a lease, leader, proclaim, resign; the missing-leader errors of v3_curl.
  const session = String((await ok(ep, '/v3/lease/grant', { TTL: 60 }))['ID']);
  const campaign = await ok(ep, '/v3/election/campaign', { name: b64('/election-prefix'), value: b64('v1'), lease: session });
  const leader = campaign['leader'] as Record<string, unknown>;
  assert.match(JSON.stringify(await ok(ep, '/v3/election/leader', { name: b64('/election-prefix') })), new RegExp(b64('v1')));
  await ok(ep, '/v3/election/proclaim', { leader, value: b64('v2') });
  await ok(ep, '/v3/election/resign', { leader });
  assert.match((await post(ep, '/v3/election/proclaim', { value: b64('v2') })).body, /"leader\\" field must be provided/);
  assert.match((await post(ep, '/v3/election/resign', {})).body, /"leader\\" field must be provided/);
  // Lock and unlock.
  const lock = await ok(ep, '/v3/lock/lock', { name: b64('l'), lease: session });
  await ok(ep, '/v3/lock/unlock', { key: lock['key'] });

  // Auth (v3_curl's auth test): root, enable, authenticate, a put with the token, a put without it refused.
  await ok(ep, '/v3/auth/user/add', { name: 'root', password: 'toor' });
  await ok(ep, '/v3/auth/role/add', { name: 'root' });
  await ok(ep, '/v3/auth/user/grant', { user: 'root', role: 'root' });
  await ok(ep, '/v3/auth/enable', {});
  const token = String((await ok(ep, '/v3/auth/authenticate', { name: 'root', password: 'toor' }))['token']);
  await ok(ep, '/v3/kv/put', { key: b64('authed'), value: b64('1') }, { Authorization: token });
  assert.match((await post(ep, '/v3/kv/put', { key: b64('authed'), value: b64('2') })).body, /user name is empty/);
  await ok(ep, '/v3/auth/disable', {}, { Authorization: token });

  // Other HTTP passes through.
  const [host, port] = ep.split(':');
  const health = await new Promise<number>((resolve) => http.get({ host, port: Number(port), path: '/health', agent: false }, (r) => (r.resume(), resolve(r.statusCode ?? 0))));
  assert.equal(health, 200);

  assert.equal(await rig.shadow.drained(), true, summary(rig));
  assert.equal(rig.shadow.report.divergences, 0, summary(rig));
  for (const rpc of ['KV.Put', 'KV.Range', 'KV.Txn', 'Watch.Watch', 'Lease.LeaseKeepAlive', 'Lease.LeaseTimeToLive', 'Election.Campaign', 'Lock.Lock', 'Auth.Authenticate']) {
    assert.ok((rig.shadow.report.rpcs.get(rpc)?.compared ?? 0) > 0, `${rpc} compared\n${summary(rig)}`);
  }
  assert.equal(rig.shadow.report.rpcs.get('KV.Put')?.notCompared.get('not decodable'), 1, summary(rig));
});

test('a simulator run as 3.6 behind etcd 3.4.23 over the gateway: the tombstone at the compaction revision diverges in the watch', { skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-shadow-gw-'));
  const planted = await startRig({ etcdVersion: '3.6', divergenceDir: dir });
  try {
    const ep = planted.shadow.endpoint;
    await ok(ep, '/v3/kv/put', { key: b64('/k'), value: b64('1') }); // 2
    const at = (await ok(ep, '/v3/kv/deleterange', { key: b64('/k') }))['header'] as { revision: string }; // 3
    await ok(ep, '/v3/kv/compaction', { revision: at.revision, physical: true });
    const watching = stream(ep, '/v3/watch', [{ create_request: { key: b64('/k'), start_revision: at.revision } }], (ls) => ls.some((l) => l.includes('"events"')));
    await ok(ep, '/v3/kv/put', { key: b64('/k'), value: b64('2') }); // 4: etcd 3.4.23's first event for this watch
    const lines = await watching;
    // The application got etcd 3.4.23's answer: no DELETE at the compaction revision.
    assert.doesNotMatch(lines.join('\n'), /"DELETE"/);
    await planted.shadow.drained();
    assert.equal(planted.shadow.report.divergences, 1, summary(planted));
    assert.match(planted.divergences[0]!, /^Watch\.Watch id 0\b/);
    const [sub] = readdirSync(dir);
    const d = JSON.parse(readFileSync(join(dir, sub!, 'divergence.json'), 'utf8')) as { etcd: { type?: string }; etcdsim: { type?: string } };
    assert.equal(d.etcdsim.type, 'DELETE', JSON.stringify(d));
    assert.equal(d.etcd.type, 'PUT');
    // The scenario is the same as one recorded over gRPC: `etcdsim diff --replay` plays it (planted.test.ts).
    // The watch's creation and the last put race (the put's answer may reach the shadow first): either order.
    const steps = parseScenario(readFileSync(join(dir, sub!, 'scenario.json'), 'utf8'))
      .steps.filter((st) => 'request' in st)
      .map((st) => st.rpc);
    assert.deepEqual(steps.slice(0, 3), ['KV.Put', 'KV.DeleteRange', 'KV.Compact']);
    assert.deepEqual(steps.slice(3).sort(), ['KV.Put', 'Watch.Watch']);
  } finally {
    await planted.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
