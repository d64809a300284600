import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as https from 'node:https';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { startEtcd, type EtcdProcess } from '../../src/diff/etcd_process.js';
import { serve, type ServeHandle } from '../../src/grpc/server.js';
import { etcdService } from '../../src/grpc/index.js';
import { requireCommands } from '../support/prerequisites.js';
import { CLIENT_EXT, SERVER_EXT, TestPki } from '../grpc/pki.js';

// etcd's HTTP endpoints on the client port (/health, /version, /metrics, the gRPC gateway under /v3/):
// every request is sent over HTTP/1.1 to `serve({ port: 0 })` and to a real etcd 3.4.23 started here,
// in the same order, so revisions match; status, the headers that matter and the JSON are compared
// after the member's IDs, URLs and sizes are normalised.
const skipEtcd = requireCommands(['etcd']);

/** One answer: status, headers, trailers, body text. */
interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly trailers: NodeJS.Dict<string>;
  readonly body: string;
}

function request(address: string, method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<Answer> {
  const [host, port] = address.split(':') as [string, string];
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port: Number(port), method, path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, trailers: res.trailers, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A target (real or simulated) and what its answers need normalised to compare. */
interface Target {
  readonly name: string;
  readonly address: string;
  /** Strings (IDs, URLs) to replace, with their placeholders. */
  readonly subst: Array<[string, string]>;
}

const HEADERS_THAT_MATTER = [
  'content-type',
  'grpc-metadata-content-type',
  'trailer',
  'allow',
  'x-content-type-options',
  'access-control-allow-origin',
  'access-control-allow-methods',
  'access-control-allow-headers',
] as const;

/** Body with the target's own IDs, URLs and sizes replaced, so the same request gives the same text. */
function normalise(t: Target, body: string): string {
  let out = body;
  for (const [from, to] of t.subst) out = out.split(from).join(to);
  return out
    .replace(/"(dbSize|dbSizeInUse|raftIndex|raftAppliedIndex)":"\d+"/g, '"$1":"<n>"')
    .replace(/"token":"[^"]*"/g, '"token":"<token>"');
}

function view(t: Target, a: Answer): Record<string, unknown> {
  const headers: Record<string, unknown> = {};
  for (const h of HEADERS_THAT_MATTER) headers[h] = a.headers[h];
  headers['framing'] = a.headers['content-length'] !== undefined ? 'length' : a.headers['transfer-encoding'];
  return { status: a.status, headers, trailers: { ...a.trailers }, body: normalise(t, a.body) };
}

let etcd: EtcdProcess | undefined;
let sim: ServeHandle | undefined;
const targets: { etcd?: Target; sim?: Target } = {};

before(async () => {
  if (skipEtcd !== false) return;
  etcd = await startEtcd({ heartbeatMs: 100, electionMs: 1000 });
  sim = await serve({ port: 0, etcdVersion: '3.4' });
  for (const [name, address, peer] of [
    ['etcd', etcd.address, etcd.peerUrl],
    ['etcdsim', sim.address, 'http://localhost:2380'],
  ] as const) {
    const list = JSON.parse((await request(address, 'POST', '/v3/cluster/member/list', '{}')).body) as {
      header: { cluster_id: string; member_id: string };
      members: Array<{ clientURLs: string[] }>;
    };
    const t: Target = {
      name,
      address,
      subst: [
        [list.header.cluster_id, '<cluster>'],
        [list.header.member_id, '<member>'],
        [peer, '<peer-url>'],
        [list.members[0]!.clientURLs[0]!, '<client-url>'],
      ],
    };
    if (name === 'etcd') targets.etcd = t;
    else targets.sim = t;
  }
});

after(async () => {
  await sim?.close();
  await etcd?.stop();
});

/** Sends the same request to etcd, then to the simulator, and compares what they answer. */
async function same(method: string, path: string, body?: string, headers?: Record<string, string>, fix: (s: string) => string = (s) => s): Promise<Answer> {
  const e = targets.etcd!;
  const s = targets.sim!;
  const a = await request(e.address, method, path, body, headers);
  const b = await request(s.address, method, path, body, headers);
  const va = view(e, a);
  const vb = view(s, b);
  va['body'] = fix(va['body'] as string);
  vb['body'] = fix(vb['body'] as string);
  assert.deepEqual(vb, va, `${method} ${path} ${body ?? ''}`);
  return b;
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');

test('/health, /version, /livez, /readyz and unknown paths answer as etcd 3.4.23', { skip: skipEtcd }, async () => {
  await same('GET', '/health');
  await same('GET', '/health?exclude=NOSPACE');
  await same('POST', '/health');
  await same('GET', '/version');
  await same('PUT', '/version');
  await same('GET', '/livez');
  await same('GET', '/readyz');
  await same('GET', '/nope');
  await same('OPTIONS', '/v3/kv/range');
  await same('GET', '/v3/kv/put');
  await same('GET', '/v3/watch');
  await same('POST', '/v3/maintenance/hashkv', '{}');
  await same('POST', '/v3/auth/status', '{}');
  await same('POST', '/v3alpha/kv/range', '{}');
});

test('the KV gateway: put, range, deleterange, txn, compaction, and their errors', { skip: skipEtcd }, async () => {
  await same('POST', '/v3/kv/put', JSON.stringify({ key: b64('foo'), value: b64('bar') }));
  await same('POST', '/v3/kv/put', JSON.stringify({ key: b64('foo'), value: b64('baz'), prev_kv: true }));
  await same('POST', '/v3/kv/put', JSON.stringify({ key: b64('foo'), value: b64('qux'), prevKv: true }));
  await same('POST', '/v3/kv/put', JSON.stringify({ key: b64('a'), value: b64('1') }));
  await same('POST', '/v3/kv/range', JSON.stringify({ key: b64('foo') }));
  await same('POST', '/v3beta/kv/range', JSON.stringify({ key: b64('foo') }));
  await same('POST', '/v3/kv/range', JSON.stringify({ key: b64('none') }));
  await same('POST', '/v3/kv/range', JSON.stringify({ key: b64('foo'), unknown: 1 }));
  await same('POST', '/v3/kv/range', JSON.stringify({ key: 'AA==', range_end: 'AA==', keys_only: true, sort_order: 'DESCEND', sort_target: 'MOD' }));
  await same('POST', '/v3/kv/range', JSON.stringify({ key: 'AA==', range_end: 'AA==', countOnly: true }));
  await same('POST', '/v3/kv/range', JSON.stringify({ key: 'AA==', range_end: 'AA==', limit: 1, sort_order: 1 }));
  await same('POST', '/v3/kv/range', '{"key":"Zm9v","revision":100}');
  await same('POST', '/v3/kv/range', '{"key":"Zm9v","revision":"100"}');
  await same('POST', '/v3/kv/range', '');
  await same('POST', '/v3/kv/range', '{bad');
  for (const bad of ['{"key":5}', '{"key":"Zm9v","revision":"abc"}', '{"key":"Zm9v","revision":"12x"}', '{"key":"Zm9v","keys_only":"yes"}', '[1]', '{"key":"Zm9v!"}', '{"key":"Zm9"}', '{"key":"Zm9v","sort_order":"BAD"}', '{"key":"Zm9v"', '{"key" "x"}', '{"key":"Zm9v",}', '{"key":tru}']) {
    await same('POST', '/v3/kv/range', bad);
  }
  await same('POST', '/v3/kv/range', '{"key":"Zm9v"} trailing bytes are not read');
  await same('POST', '/v3/kv/range', JSON.stringify({ key: b64('foo') }), { 'Content-Type': 'application/grpc' });
  await same(
    'POST',
    '/v3/kv/txn',
    JSON.stringify({
      compare: [{ key: b64('a'), result: 'EQUAL', target: 'VALUE', value: b64('1') }],
      success: [{ request_put: { key: b64('a'), value: b64('2') } }, { request_range: { key: b64('a') } }],
      failure: [],
    }),
  );
  await same(
    'POST',
    '/v3/kv/txn',
    JSON.stringify({
      compare: [{ key: b64('a'), result: 'EQUAL', target: 'VALUE', value: b64('1') }],
      success: [{ requestPut: { key: b64('a'), value: b64('3') } }],
      failure: [{ requestDeleteRange: { key: b64('a'), prevKv: true } }],
    }),
  );
  await same('POST', '/v3/kv/txn', JSON.stringify({ compare: [{ key: b64('a'), result: 0, target: 3, value: b64('1') }] }));
  await same('POST', '/v3/kv/deleterange', JSON.stringify({ key: b64('foo'), prev_kv: true }));
  await same('POST', '/v3/kv/deleterange', JSON.stringify({ key: b64('nothing') }));
  await same('POST', '/v3/kv/compaction', '{"revision":"3"}');
  await same('POST', '/v3/kv/compaction', '{"revision":"3"}');
  await same('POST', '/v3/kv/compaction', '{"revision":"300"}');
  await same('POST', '/v3/kv/range', '{"key":"Zm9v","revision":"2"}');
});

test('the lease gateway: grant, timetolive, leases, revoke (both paths) and the keep-alive stream', { skip: skipEtcd }, async () => {
  // TTLs left depend on when each target is asked: 59 or 60 of 60 are the same answer.
  const ttl = (s: string): string => s.replace(/"TTL":"(59|60)"/g, '"TTL":"<ttl>"');
  await same('POST', '/v3/lease/grant', '{"TTL":"60","ID":"1000"}');
  await same('POST', '/v3/lease/grant', '{"TTL":60,"ID":1000}');
  await same('POST', '/v3/lease/grant', '{"TTL":60,"ID":7587869018744586780}');
  await same('POST', '/v3/kv/put', JSON.stringify({ key: b64('leased'), value: b64('x'), lease: '1000' }));
  await same('POST', '/v3/lease/timetolive', '{"ID":1000,"keys":true}', undefined, ttl);
  await same('POST', '/v3/kv/lease/timetolive', '{"ID":"1000"}', undefined, ttl);
  await same('POST', '/v3/lease/leases', '{}', undefined, (s) => s.replace('{"ID":"1000"},{"ID":"7587869018744586780"}', '{"ID":"7587869018744586780"},{"ID":"1000"}'));
  await same('POST', '/v3/kv/lease/leases', '', undefined, (s) => s.replace('{"ID":"1000"},{"ID":"7587869018744586780"}', '{"ID":"7587869018744586780"},{"ID":"1000"}'));
  const ka = await same('POST', '/v3/lease/keepalive', '{"ID":1000}{"ID":78}\n{"ID":"1000"}', undefined, ttl);
  assert.equal(ka.body.split('\n').filter((l) => l !== '').length, 3);
  await same('POST', '/v3/lease/keepalive', 'x');
  await same('POST', '/v3/lease/revoke', '{"ID":1000}');
  await same('POST', '/v3/kv/lease/revoke', '{"ID":1000}');
  await same('POST', '/v3/lease/timetolive', '{"ID":1000}');
  await same('POST', '/v3/kv/range', JSON.stringify({ key: b64('leased') }));
  await same('POST', '/v3/lease/revoke', '{"ID":"7587869018744586780"}');
});

/** Opens a stream (a watch by default) with `body`, runs `writes`, and returns the first `lines` response lines. */
function watchLines(address: string, body: string, lines: number, writes: () => Promise<void>, path = '/v3/watch'): Promise<{ status: number; headers: http.IncomingHttpHeaders; lines: string[] }> {
  const [host, port] = address.split(':') as [string, string];
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port: Number(port), method: 'POST', path, agent: false }, (res) => {
      let text = '';
      let started = false;
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
        if (!started) {
          started = true;
          writes().catch(reject);
        }
        const got = text.split('\n').filter((l) => l !== '');
        if (got.length >= lines) {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, lines: got.slice(0, lines) });
        }
      });
    });
    req.on('error', (e) => {
      if ((e as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(e);
    });
    // The request body ends: etcd's watch goes on (its handler waits for the client to go).
    req.end(body);
  });
}

test('the watch stream: created, events with prev_kv, a delete, and a compacted start revision', { skip: skipEtcd }, async () => {
  const run = async (t: Target) => {
    const put = (k: string, v: string): Promise<Answer> => request(t.address, 'POST', '/v3/kv/put', JSON.stringify({ key: b64(k), value: b64(v) }));
    const w = await watchLines(t.address, JSON.stringify({ create_request: { key: b64('w'), prev_kv: true } }), 4, async () => {
      await put('w', '1');
      await put('w', '2');
      await request(t.address, 'POST', '/v3/kv/deleterange', JSON.stringify({ key: b64('w') }));
    });
    const two = await watchLines(t.address, '{"create_request":{"key":"dw==","start_revision":"2"}}{"createRequest":{"key":"dw==","filters":["NOPUT"]}}', 2, async () => {});
    return { status: w.status, contentType: w.headers['content-type'], meta: w.headers['grpc-metadata-content-type'], lines: [...w.lines, ...two.lines].map((l) => normalise(t, l)) };
  };
  const a = await run(targets.etcd!);
  const b = await run(targets.sim!);
  assert.deepEqual(b, a);
  assert.match(a.lines[1]!, /^\{"result":\{"header":\{.*\},"events":\[\{"kv":\{"key":"dw==","create_revision":"\d+","mod_revision":"\d+","version":"1","value":"MQ=="\}\}\]\}\}$/);
  await same('POST', '/v3/watch', 'x');
});

test('cluster, maintenance and auth through the gateway', { skip: skipEtcd }, async () => {
  await same('POST', '/v3/cluster/member/list', '{}');
  await same('POST', '/v3/maintenance/status', '{}');
  await same('POST', '/v3/maintenance/alarm', '{}');
  await same('POST', '/v3/maintenance/defragment', '{}');
  // Membership and leadership through the gateway: answers that leave the one-member cluster as it was.
  await same('POST', '/v3/cluster/member/add', '{"peerURLs":["not a url"]}');
  await same('POST', '/v3/cluster/member/remove', '{"ID":"1"}');
  await same('POST', '/v3/cluster/member/promote', '{"ID":"1"}');
  await same('POST', '/v3/maintenance/transfer-leadership', '{"targetID":"1"}');
  await same('POST', '/v3/auth/user/add', '{"name":"root","password":"pw"}');
  await same('POST', '/v3/auth/user/grant', '{"user":"root","role":"root"}');
  await same('POST', '/v3/auth/enable', '{}');
  await same('POST', '/v3/auth/authenticate', '{"name":"root","password":"bad"}');
  await same('POST', '/v3/auth/authenticate', '{"name":"root","password":"pw"}');
  const token = async (t: Target): Promise<string> =>
    (JSON.parse((await request(t.address, 'POST', '/v3/auth/authenticate', '{"name":"root","password":"pw"}')).body) as { token: string }).token;
  const tokens = { etcd: await token(targets.etcd!), sim: await token(targets.sim!) };
  const withToken = async (path: string, body: string, header: (tok: string) => Record<string, string>): Promise<void> => {
    const a = await request(targets.etcd!.address, 'POST', path, body, header(tokens.etcd));
    const b = await request(targets.sim!.address, 'POST', path, body, header(tokens.sim));
    assert.deepEqual(view(targets.sim!, b), view(targets.etcd!, a), `${path} ${body}`);
  };
  await same('POST', '/v3/kv/put', JSON.stringify({ key: b64('a'), value: b64('1') }));
  await withToken('/v3/kv/put', JSON.stringify({ key: b64('a'), value: b64('1') }), (tok) => ({ Authorization: tok }));
  await withToken('/v3/kv/put', JSON.stringify({ key: b64('a'), value: b64('2') }), (tok) => ({ Authorization: `Bearer ${tok}` }));
  await withToken('/v3/kv/put', JSON.stringify({ key: b64('a'), value: b64('3') }), (tok) => ({ Token: tok }));
  await same('POST', '/v3/kv/put', JSON.stringify({ key: b64('a'), value: b64('1') }), { Authorization: 'bogus.1' });
  await withToken('/v3/auth/user/list', '{}', (tok) => ({ Authorization: tok }));
  await withToken('/v3/auth/user/get', '{"name":"root"}', (tok) => ({ Authorization: tok }));
  await withToken('/v3/auth/role/get', '{"role":"root"}', (tok) => ({ Authorization: tok }));
  await withToken('/v3/auth/disable', '{}', (tok) => ({ Authorization: tok }));
  await same('POST', '/v3/auth/user/delete', '{"name":"root"}');
});

test('lock and election through the gateway', { skip: skipEtcd }, async () => {
  const lock = b64('mylock');
  const ele = b64('ele');
  await same('POST', '/v3/lease/grant', '{"TTL":60,"ID":500}');
  const held = await same('POST', '/v3/lock/lock', JSON.stringify({ name: lock, lease: 500 }));
  await same('POST', '/v3/lock/lock', JSON.stringify({ name: lock, lease: 501 }));
  await same('POST', '/v3/lock/unlock', JSON.stringify({ key: (JSON.parse(held.body) as { key: string }).key }));
  await same('POST', '/v3/election/leader', JSON.stringify({ name: ele }));
  await same('POST', '/v3/election/campaign', JSON.stringify({ name: ele, lease: 500, value: b64('v1') }));
  await same('POST', '/v3/election/leader', JSON.stringify({ name: ele }));
  await same('POST', '/v3/election/proclaim', JSON.stringify({ leader: { name: ele, key: b64('ele/1f4'), rev: '1', lease: 500 }, value: b64('v2') }));
  const observe = async (t: Target) => (await watchLines(t.address, JSON.stringify({ name: ele }), 1, async () => {}, '/v3/election/observe')).lines.map((l) => normalise(t, l));
  assert.deepEqual(await observe(targets.sim!), await observe(targets.etcd!));
  await same('POST', '/v3/election/resign', JSON.stringify({ leader: { name: ele, key: b64('ele/1f4'), rev: '1', lease: 500 } }));
  await same('POST', '/v3/lease/revoke', '{"ID":500}');
});

test('/metrics: etcd names, HELP and TYPE; leader, key and revision values as etcd reports them', { skip: skipEtcd }, async () => {
  const scrape = async (t: Target) => {
    const a = await request(t.address, 'GET', '/metrics');
    const meta = new Map<string, string>();
    const values = new Map<string, string>();
    for (const line of a.body.split('\n')) {
      const m = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
      if (m !== null) meta.set(`${m[1]} ${m[2]}`, m[3]!);
      else if (line !== '') values.set(line.slice(0, line.lastIndexOf(' ')), line.slice(line.lastIndexOf(' ') + 1));
    }
    return { contentType: a.headers['content-type'], meta, values };
  };
  // The counters below must have counted something, whatever ran before: one of each, on both.
  for (const t of [targets.etcd!, targets.sim!]) {
    await request(t.address, 'POST', '/v3/kv/put', JSON.stringify({ key: b64('metrics'), value: b64('1') }));
    await request(t.address, 'POST', '/v3/kv/deleterange', JSON.stringify({ key: b64('metrics') }));
    const grant = JSON.parse((await request(t.address, 'POST', '/v3/lease/grant', JSON.stringify({ TTL: '60' }))).body) as { ID: string };
    await request(t.address, 'POST', '/v3/lease/revoke', JSON.stringify({ ID: grant.ID }));
  }
  const e = await scrape(targets.etcd!);
  const s = await scrape(targets.sim!);
  assert.equal(s.contentType, e.contentType);
  for (const [k, v] of s.meta) assert.equal(v, e.meta.get(k), k);
  for (const name of [
    'etcd_server_has_leader',
    'etcd_server_is_leader',
    'etcd_server_leader_changes_seen_total',
    'etcd_debugging_mvcc_keys_total',
    'etcd_debugging_mvcc_current_revision',
    'etcd_debugging_mvcc_compact_revision',
    'etcd_server_version{server_version="3.4.23"}',
    'etcd_cluster_version{cluster_version="3.4"}',
  ]) {
    assert.equal(s.values.get(name), e.values.get(name), name);
  }
  // Watch gauges: when etcd notices that an earlier test's HTTP watch went away is its own timing, so
  // only their presence is compared here (the next test checks their values on the simulator).
  for (const name of ['etcd_debugging_mvcc_watch_stream_total', 'etcd_debugging_mvcc_watcher_total']) {
    assert.ok(e.values.has(name) && s.values.has(name), name);
  }
  for (const name of ['etcd_mvcc_db_total_size_in_bytes', 'etcd_mvcc_put_total', 'etcd_mvcc_delete_total', 'etcd_debugging_lease_granted_total', 'etcd_debugging_lease_revoked_total', 'etcd_server_proposals_committed_total']) {
    assert.ok(Number(s.values.get(name)) > 0, `${name} = ${s.values.get(name)}`);
  }
});

test('h2c requests that are not gRPC are reset, as etcd 3.4 resets them', { skip: skipEtcd }, async () => {
  const rst = (address: string): Promise<number | undefined> =>
    new Promise((resolve) => {
      const c = http2.connect(`http://${address}`);
      c.on('error', () => {});
      const r = c.request({ ':path': '/health' });
      r.on('error', () => {});
      r.on('close', () => {
        resolve(r.rstCode);
        c.close();
      });
      r.end();
    });
  assert.equal(await rst(targets.sim!.address), await rst(targets.etcd!.address));
});

/** The `{"result":{...}}` lines of a snapshot answer, each checked for etcd's fields (int64 as strings, bytes as base64). */
function snapshotLines(body: string): Array<{ blob: Buffer; remaining: string | undefined }> {
  return body
    .trim()
    .split('\n')
    .map((line) => {
      const r = (JSON.parse(line) as { result: Record<string, string> }).result;
      assert.deepEqual(Object.keys(r).filter((k) => k !== 'blob' && k !== 'remaining_bytes'), [], line.slice(0, 80));
      return { blob: Buffer.from(r['blob'] ?? '', 'base64'), remaining: r['remaining_bytes'] };
    });
}

test('/v3/maintenance/snapshot: the file in {"result":{"blob"}} lines, its SHA-256 last, as etcd 3.4.23\'s gateway streams it', { skip: skipEtcd }, async () => {
  for (const t of [targets.etcd!, targets.sim!]) {
    const a = await request(t.address, 'POST', '/v3/maintenance/snapshot', '{}');
    assert.equal(a.status, 200, t.name);
    assert.equal(a.headers['content-type'], 'application/json', t.name);
    const lines = snapshotLines(a.body);
    const file = Buffer.concat(lines.slice(0, -1).map((l) => l.blob));
    assert.ok(file.length >= 16384, `${t.name}: a bbolt file`);
    assert.deepEqual(lines.at(-1)!.blob, createHash('sha256').update(file).digest(), `${t.name}: the SHA-256 of the file, last`);
  }
});

test('/v3/maintenance/snapshot of a larger store: 32 KiB pieces counting remaining_bytes down, the member\'s own file', async () => {
  const h = await serve({ port: 0, etcdVersion: '3.4' });
  try {
    for (let i = 0; i < 300; i++) h.server.services.kv.put({ key: Buffer.from(`k${i}`), value: Buffer.alloc(1024, i) });
    const a = await request(h.address, 'POST', '/v3/maintenance/snapshot', '{}');
    const lines = snapshotLines(a.body);
    const pieces = lines.slice(0, -1);
    const file = Buffer.concat(pieces.map((l) => l.blob));
    assert.deepEqual(Buffer.concat([file, lines.at(-1)!.blob]), Buffer.from(h.server.etcdSnapshot()), 'etcdSnapshot(): the file and its checksum');
    assert.ok(pieces.length > 5);
    assert.ok(pieces.slice(0, -1).every((l) => l.blob.length === 32 * 1024));
    let left = file.length;
    for (const l of pieces) {
      left -= l.blob.length;
      assert.equal(l.remaining, left === 0 ? undefined : String(left), 'bytes of the file still to come (0, the last piece, left out as etcd leaves it)');
    }
  } finally {
    await h.close();
  }
});

test('/v3/maintenance/snapshot to a client that stops reading: the member writes its file only as far as the socket takes it', async () => {
  const h = await serve({ port: 0, etcdVersion: '3.4' });
  const m = h.server.services.maintenance;
  const original = m.snapshotStream.bind(m);
  let taken = 0;
  m.snapshotStream = (req, ctx, opts) => {
    const it = original(req, ctx, opts);
    return {
      next: () => {
        const r = it.next();
        if (r.done !== true) taken++;
        return r;
      },
      [Symbol.iterator]() {
        return this;
      },
    };
  };
  const [host, port] = h.address.split(':') as [string, string];
  const sock = net.connect(Number(port), host);
  try {
    for (let i = 0; i < 20_000; i++) h.server.services.kv.put({ key: Buffer.from(`k${i}`), value: Buffer.alloc(1024, i) });
    const pieces = Math.ceil(h.server.etcdSnapshot().length / (32 * 1024));
    let got = 0;
    sock.on('data', (d: Buffer) => {
      got += d.length;
      sock.pause(); // the client reads its first bytes, then stops
    });
    sock.write(`POST /v3/maintenance/snapshot HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}`);
    // Until the writer stands still (the socket's buffers are full), looked at turn by turn.
    let last = -1;
    let still = 0;
    while (still < 200) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (taken === last && got > 0) still++;
      else still = 0;
      last = taken;
    }
    assert.ok(taken < pieces / 2, `${taken} of ${pieces} pieces written for a client that stopped reading`);
  } finally {
    sock.destroy();
    await h.close();
  }
});

test('gRPC and HTTP share the port: a put over gRPC is read over the gateway, and the reverse', async () => {
  const h = await serve({ port: 0 });
  const KV = etcdService('KV');
  const c = new KV(h.address, grpc.credentials.createInsecure()) as unknown as {
    Put(req: unknown, cb: (e: Error | null) => void): void;
    Range(req: unknown, cb: (e: Error | null, r: { kvs: Array<{ value: Buffer }> }) => void): void;
    close(): void;
  };
  try {
    await new Promise<void>((resolve, reject) => c.Put({ key: Buffer.from('k'), value: Buffer.from('over grpc') }, (e) => (e ? reject(e) : resolve())));
    const r = await request(h.address, 'POST', '/v3/kv/range', JSON.stringify({ key: b64('k') }));
    assert.equal(r.status, 200);
    assert.equal((JSON.parse(r.body) as { kvs: Array<{ value: string }> }).kvs[0]!.value, b64('over grpc'));
    await request(h.address, 'POST', '/v3/kv/put', JSON.stringify({ key: b64('k'), value: b64('over http') }));
    const g = await new Promise<{ kvs: Array<{ value: Buffer }> }>((resolve, reject) => c.Range({ key: Buffer.from('k') }, (e, res) => (e ? reject(e) : resolve(res))));
    assert.equal(g.kvs[0]!.value.toString(), 'over http');
    // HTTP/1.1 sent a byte at a time ("P", "U" could begin HTTP/2's preface) is still told apart from it.
    const slow = await new Promise<string>((resolve, reject) => {
      const [host, port] = h.address.split(':') as [string, string];
      const sock = net.connect(Number(port), host);
      let t = '';
      sock.on('data', (d: Buffer) => (t += d.toString()));
      sock.on('end', () => resolve(t));
      sock.on('error', reject);
      const parts = ['P', 'U', 'T /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'];
      const next = (): void => {
        const p = parts.shift();
        if (p !== undefined) sock.write(p, () => setImmediate(next));
      };
      next();
    });
    assert.match(slow, /^HTTP\/1\.1 405 Method Not Allowed\r\n/);
  } finally {
    c.close();
    await h.close();
  }
});

test('3.5+ profiles: /livez and /readyz answer ok; 3.6+ /health carries a reason; /v3beta only up to 3.5', async () => {
  const h35 = await serve({ port: 0, etcdVersion: '3.5' });
  const h36 = await serve({ port: 0, etcdVersion: '3.6' });
  try {
    assert.deepEqual(await bodyOf(h35.address, '/health'), [200, '{"health":"true"}']);
    assert.deepEqual(await bodyOf(h36.address, '/health'), [200, '{"health":"true","reason":""}']);
    assert.deepEqual(await bodyOf(h35.address, '/version'), [200, '{"etcdserver":"3.5.31","etcdcluster":"3.5.0"}']);
    assert.deepEqual(await bodyOf(h36.address, '/livez'), [200, 'ok\n']);
    assert.deepEqual(await bodyOf(h36.address, '/readyz'), [200, 'ok\n']);
    assert.deepEqual(await bodyOf(h36.address, '/readyz?verbose&exclude=linearizable_read'), [200, '[+]data_corruption ok\n[+]serializable_read ok\n[+]non_learner ok\nok\n']);
    assert.deepEqual(await bodyOf(h35.address, '/readyz?verbose'), [200, '[+]data_corruption ok\n[+]serializable_read ok\n[+]linearizable_read ok\nok\n']);
    assert.deepEqual((await request(h36.address, 'POST', '/readyz')).status, 405);
    assert.deepEqual(await bodyOf(h36.address, '/livez/serializable_read?verbose'), [200, '[+]serializable_read ok\nok\n']);
    assert.equal((await request(h35.address, 'POST', '/v3beta/kv/range', '{}')).status, 400);
    assert.equal((await request(h36.address, 'POST', '/v3beta/kv/range', '{}')).status, 404);
    const st = await request(h35.address, 'POST', '/v3/auth/status', '{}');
    assert.equal(st.status, 200);
    // grpc-gateway 1.16 (etcd 3.5) writes its Error message in proto order; v2 (etcd 3.6+) a google.rpc.Status.
    const err35 = await request(h35.address, 'POST', '/v3/kv/range', '{}');
    assert.deepEqual([err35.status, err35.body], [400, '{"error":"etcdserver: key is not provided","code":3,"message":"etcdserver: key is not provided"}']);
    const err = await request(h36.address, 'POST', '/v3/kv/range', '{}');
    assert.deepEqual([err.status, err.body], [400, '{"code":3,"message":"etcdserver: key is not provided"}']);
  } finally {
    await h35.close();
    await h36.close();
  }
});

async function bodyOf(address: string, path: string): Promise<[number, string]> {
  const a = await request(address, 'GET', path);
  return [a.status, a.body];
}

/** The headers that matter over TLS: content type, framing, trailers announced, and the call's metadata. */
function tlsHeaders(h: http.IncomingHttpHeaders | http2.IncomingHttpHeaders): Record<string, unknown> {
  const out: Record<string, unknown> = { framing: h['content-length'] !== undefined ? 'length' : 'chunked' };
  for (const [k, v] of Object.entries(h)) {
    if (k === 'content-type' || k === 'trailer' || k === 'allow' || k.startsWith('grpc-metadata-') || k.startsWith('access-control-')) out[k] = v;
  }
  return out;
}

/** One request over TLS: HTTP/1.1 (node:https) or HTTP/2 (node:http2), as etcd's secure listener serves both. */
async function tlsRequest(proto: 'h1' | 'h2', address: string, ca: Buffer, method: string, path: string, body?: string): Promise<{ status: number; headers: Record<string, unknown>; body: string; trailers: Record<string, unknown> }> {
  const [host, port] = address.split(':') as [string, string];
  if (proto === 'h1') {
    return new Promise((resolve, reject) => {
      const req = https.request({ host, port: Number(port), method, path, ca, servername: 'localhost', agent: false }, (res) => {
        let t = '';
        res.on('data', (d: Buffer) => (t += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: tlsHeaders(res.headers), body: t, trailers: { ...res.trailers } }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }
  return new Promise((resolve, reject) => {
    const c = http2.connect(`https://${address}`, { ca, servername: 'localhost' });
    c.on('error', reject);
    const r = c.request({ ':path': path, ':method': method });
    let status = 0;
    let headers: Record<string, unknown> = {};
    let t = '';
    let trailers: Record<string, unknown> = {};
    r.on('response', (hd) => {
      status = Number(hd[':status']);
      headers = tlsHeaders(hd);
    });
    r.on('trailers', (tr) => (trailers = { ...tr }));
    r.on('data', (d: Buffer) => (t += d.toString()));
    r.on('end', () => {
      c.close();
      resolve({ status, headers, body: t, trailers });
    });
    r.on('error', reject);
    r.end(body);
  });
}

/** Everything a server wrote on an HTTP/1.1 connection over TLS (ALPN http/1.1) until it closed it. */
function tlsTranscript(address: string, ca: Buffer, sent: string): Promise<string> {
  const [host, port] = address.split(':') as [string, string];
  return new Promise((resolve) => {
    const s = tls.connect({ host, port: Number(port), ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, () => s.write(sent, 'latin1'));
    let got = '';
    s.on('data', (d: Buffer) => (got += d.toString('latin1')));
    s.on('error', () => s.destroy());
    s.on('close', () => resolve(got));
  });
}

test('over TLS the port serves gRPC, HTTP/1.1 and non-gRPC HTTP/2 requests, as etcd 3.4.23 over TLS', { skip: requireCommands(['openssl', 'etcd']) }, async () => {
  const pki = new TestPki('etcdsim-http-tls-');
  let real: EtcdProcess | undefined;
  let h: ServeHandle | undefined;
  try {
    pki.ca('ca');
    pki.issue('server', '/CN=localhost', 'ca', SERVER_EXT);
    const ca = readFileSync(pki.path('ca.crt'));
    real = await startEtcd({ heartbeatMs: 100, electionMs: 1000, tls: { certFile: pki.path('server.crt'), keyFile: pki.path('server.key') } });
    h = await serve({ port: 0, etcdVersion: '3.4', tls: { cert: readFileSync(pki.path('server.crt')), key: readFileSync(pki.path('server.key')) } });
    for (const proto of ['h1', 'h2'] as const) {
      for (const [method, path, body] of [
        ['GET', '/health', undefined],
        ['GET', '/version', undefined],
        ['GET', '/nope', undefined],
        ['POST', '/v3/kv/range', '{}'],
        ['POST', '/v3/kv/range', '{"key":"Zm9v"}'],
      ] as const) {
        const a = await tlsRequest(proto, real.address, ca, method, path, body);
        const b = await tlsRequest(proto, h.address, ca, method, path, body);
        const norm = (x: typeof a): typeof a => ({ ...x, body: x.body.replace(/"(cluster_id|member_id)":"\d+"/g, '"$1":"<id>"') });
        assert.deepEqual(norm(b), norm(a), `${proto} ${method} ${path}`);
      }
    }
    // The first line over TLS as Go's server reads it: any token a method, PRI one too, HTTP/1.9 served as 1.1.
    for (const first of ['get /health HTTP/1.1', 'PRI /health HTTP/1.1', 'GET /health HTTP/1.9', 'FROB /nowhere HTTP/1.1']) {
      const sent = `${first}\r\nHost: x\r\nConnection: close\r\n\r\n`;
      const etcdSaw: string = await tlsTranscript(real.address, ca, sent);
      const simSaw: string = await tlsTranscript(h.address, ca, sent);
      assert.match(etcdSaw, /^HTTP\/1\.1 [0-9]{3} /, `etcd over TLS: ${first}`);
      assert.equal(simSaw.replace(/Date: [^\r]*/, 'Date:'), etcdSaw.replace(/Date: [^\r]*/, 'Date:'), `over TLS: ${first}`);
    }
    const KV = etcdService('KV');
    const c = new KV(h.address, grpc.credentials.createSsl(ca), { 'grpc.ssl_target_name_override': 'localhost' }) as unknown as {
      Put(req: unknown, cb: (e: Error | null) => void): void;
      close(): void;
    };
    await new Promise<void>((resolve, reject) => c.Put({ key: Buffer.from('k'), value: Buffer.from('v') }, (e) => (e ? reject(e) : resolve())));
    c.close();
  } finally {
    await h?.close();
    await real?.stop();
    pki.remove();
  }
});

test('with --client-cert-auth and auth enabled, a gateway request with a certificate CN is refused, as etcd refuses it', { skip: requireCommands(['openssl', 'etcd']) }, async () => {
  const pki = new TestPki('etcdsim-http-cn-');
  let real: EtcdProcess | undefined;
  let h: ServeHandle | undefined;
  try {
    pki.ca('ca');
    pki.issue('server', '/CN=localhost', 'ca', SERVER_EXT);
    pki.issue('client', '/CN=root', 'ca', CLIENT_EXT);
    const ca = readFileSync(pki.path('ca.crt'));
    const cert = readFileSync(pki.path('client.crt'));
    const key = readFileSync(pki.path('client.key'));
    real = await startEtcd({
      heartbeatMs: 100,
      electionMs: 1000,
      tls: { certFile: pki.path('server.crt'), keyFile: pki.path('server.key'), trustedCaFile: pki.path('ca.crt'), clientCertAuth: true },
    });
    h = await serve({ port: 0, etcdVersion: '3.4', tls: { cert: readFileSync(pki.path('server.crt')), key: readFileSync(pki.path('server.key')), ca, clientCertAuth: true } });
    const post = (address: string, path: string, body: string, method = 'POST'): Promise<[number, string]> => {
      const [host, port] = address.split(':') as [string, string];
      return new Promise((resolve, reject) => {
        const req = https.request({ host, port: Number(port), method, path, ca, cert, key, servername: 'localhost', agent: false }, (res) => {
          let t = '';
          res.on('data', (d: Buffer) => (t += d.toString()));
          res.on('end', () => resolve([res.statusCode ?? 0, t.replace(/"(cluster_id|member_id)":"\d+"/g, '"$1":"<id>"')]));
        });
        req.on('error', reject);
        req.end(body);
      });
    };
    for (const [path, body, method] of [
      ['/v3/auth/user/add', '{"name":"root","password":"pw"}', 'POST'],
      ['/v3/auth/user/grant', '{"user":"root","role":"root"}', 'POST'],
      ['/v3/auth/enable', '{}', 'POST'],
      ['/v3/kv/range', '{"key":"Zm9v"}', 'POST'],
      ['/v3/auth/authenticate', '{"name":"root","password":"pw"}', 'POST'],
      ['/health', '', 'GET'],
    ] as const) {
      assert.deepEqual(await post(h.address, path, body, method), await post(real.address, path, body, method), path);
    }
  } finally {
    await h?.close();
    await real?.stop();
    pki.remove();
  }
});

test('a Lock waiting over the gateway releases its key when the client goes away; close() ends open streams', async () => {
  const h = await serve({ port: 0 });
  try {
    await request(h.address, 'POST', '/v3/lease/grant', '{"TTL":60,"ID":7}');
    await request(h.address, 'POST', '/v3/lease/grant', '{"TTL":60,"ID":8}');
    const first = await request(h.address, 'POST', '/v3/lock/lock', JSON.stringify({ name: b64('L'), lease: 7 }));
    assert.equal((JSON.parse(first.body) as { key: string }).key, b64('L/7'));
    // The second Lock waits (its key is written), until its client disconnects: then its key is deleted.
    const [host, port] = h.address.split(':') as [string, string];
    const written = new Promise<void>((resolve) => {
      const off = h.server.mvcc.subscribe((_rev, events) => {
        if (events.some((e) => e.type === 'PUT')) {
          off();
          resolve();
        }
      });
    });
    const waiting = http.request({ host, port: Number(port), method: 'POST', path: '/v3/lock/lock', agent: false });
    waiting.on('error', () => {});
    waiting.end(JSON.stringify({ name: b64('L'), lease: 8 }));
    await written;
    const count = async (): Promise<string | undefined> =>
      (JSON.parse((await request(h.address, 'POST', '/v3/kv/range', JSON.stringify({ key: b64('L/'), range_end: b64('L0'), count_only: true }))).body) as { count?: string }).count;
    assert.equal(await count(), '2');
    const deleted = new Promise<void>((resolve) => {
      const off = h.server.mvcc.subscribe((_rev, events) => {
        if (events.some((e) => e.type === 'DELETE')) {
          off();
          resolve();
        }
      });
    });
    waiting.destroy();
    await deleted;
    assert.equal(await count(), '1');

    // An open watch over HTTP: close() drops its connection and releases its watchers.
    const dropped = await new Promise<string>((resolve, reject) => {
      const req = http.request({ host, port: Number(port), method: 'POST', path: '/v3/watch', agent: false }, (res) => {
        res.once('data', () => void h.close());
        res.on('error', () => resolve('dropped'));
        res.on('aborted', () => resolve('dropped'));
        res.on('end', () => resolve('ended'));
      });
      req.on('error', reject);
      req.end(JSON.stringify({ create_request: { key: b64('w') } }));
    });
    assert.equal(dropped, 'dropped');
    assert.equal(h.server.services.watch.calls().length, 0);
  } finally {
    await h.close();
  }
});

test('a gateway request whose client goes before its body ends calls nothing, as Go\'s gateway fails the body read', async () => {
  const h = await serve({ port: 0 });
  try {
    const [host, port] = h.address.split(':') as [string, string];
    // A lease grant whose body is cut off: read as an empty body, it would grant a lease with a server-chosen ID.
    const socket = net.connect({ host, port: Number(port) });
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write('POST /v3/lease/grant HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n{"TTL":');
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.destroy();
    await closed;
    // Two later round trips on new connections: the server has seen the first connection go by then.
    for (let i = 0; i < 2; i++) {
      const leases = JSON.parse((await request(h.address, 'POST', '/v3/lease/leases', '{}')).body) as { leases?: unknown[] };
      assert.deepEqual(leases.leases ?? [], []);
    }
    assert.equal(h.server.lessor.leases().length, 0);
  } finally {
    await h.close();
  }
});

test("a token naming a raft index not applied yet holds a gateway call until the member applies it, as etcd's token check does", async () => {
  const h = await serve({ port: 0, auth: { users: [{ name: 'root', password: 'pw', roles: ['root'] }], enable: true } });
  try {
    const token = (JSON.parse((await request(h.address, 'POST', '/v3/auth/authenticate', '{"name":"root","password":"pw"}')).body) as { token: string }).token;
    const ahead = `bogus.${h.server.raftIndex + 2}`;
    let answered: Answer | undefined;
    const held = request(h.address, 'POST', '/v3/kv/range', JSON.stringify({ key: b64('k') }), { Authorization: ahead }).then((a) => (answered = a));
    await request(h.address, 'POST', '/v3/kv/put', JSON.stringify({ key: b64('k'), value: b64('1') }), { Authorization: token });
    assert.equal(answered, undefined);
    await request(h.address, 'POST', '/v3/kv/put', JSON.stringify({ key: b64('k'), value: b64('2') }), { Authorization: token });
    const a = await held;
    assert.deepEqual([a.status, a.body], [401, '{"code":16,"message":"etcdserver: invalid auth token"}']);
  } finally {
    await h.close();
  }
});

test('/metrics: the watch gauges count the streams and watchers open on the member', async () => {
  const h = await serve({ port: 0 });
  const gauge = async (name: string): Promise<string | undefined> => {
    const body = (await request(h.address, 'GET', '/metrics')).body;
    return /^(\S+) (\S+)$/m.exec(body.split('\n').find((l) => l.startsWith(`${name} `)) ?? '')?.[2];
  };
  const Watch = etcdService('Watch');
  const c = new Watch(h.address, grpc.credentials.createInsecure());
  try {
    assert.equal(await gauge('etcd_debugging_mvcc_watch_stream_total'), '0');
    const call = (c as unknown as { Watch(): grpc.ClientDuplexStream<unknown, { created: boolean }> }).Watch();
    const created = new Promise<void>((resolve) => call.on('data', (r: { created: boolean }) => r.created && resolve()));
    call.write({ create_request: { key: Buffer.from('a') } });
    call.write({ create_request: { key: Buffer.from('b') } });
    await created;
    await created;
    assert.equal(await gauge('etcd_debugging_mvcc_watch_stream_total'), '1');
    assert.equal(await gauge('etcd_debugging_mvcc_watcher_total'), '2');
    call.cancel();
    call.on('error', () => {});
  } finally {
    c.close();
    await h.close();
  }
});
