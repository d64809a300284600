/**
 * Cluster membership changes, Maintenance.Hash and MoveLeader over gRPC, differentially: the same calls
 * against `serve({ port: 0 })` and a fresh real etcd 3.4.23, the simulated member advertising the real one's
 * peer and client URLs — so member and cluster IDs, member lists and backend hashes must agree exactly. An
 * added member's ID is derived from the request's second: both get the request at once, and when a second
 * boundary falls between them (rarely) the IDs (and the hashes that include them) are compared as derived
 * instead. Outside CI the tests skip without `etcd` (and `etcdctl`) on PATH; in CI a missing one fails.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import * as grpc from '@grpc/grpc-js';
import { startEtcd, type EtcdProcess } from '../../src/diff/etcd_process.js';
import { serve, type ServeHandle } from '../../src/grpc/server.js';
import { etcdService } from '../../src/grpc/index.js';
import { memberIdOf } from '../../src/server/member_id.js';
import { requireCommands } from '../support/prerequisites.js';

const skip = requireCommands(['etcd', 'etcdctl']);

type Msg = Record<string, unknown>;
type Unary = (req: Msg, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Msg) => void) => grpc.ClientUnaryCall;
type Service = 'KV' | 'Lease' | 'Cluster' | 'Maintenance';
/** A call's outcome: the response, or the status code and details. */
type Outcome = { ok: Msg } | { code: number; details: string };

const B = (s: string): Buffer => Buffer.from(s, 'utf8');

class Side {
  private readonly clients = new Map<Service, grpc.Client>();
  constructor(readonly address: string) {}
  call(service: Service, method: string, req: Msg, deadlineMs = 5000): Promise<Outcome> {
    let c = this.clients.get(service);
    if (c === undefined) {
      c = new (etcdService(service))(this.address, grpc.credentials.createInsecure());
      this.clients.set(service, c);
    }
    const fn = (c as unknown as Record<string, Unary>)[method]!.bind(c);
    return new Promise((resolve) => {
      fn(req, new grpc.Metadata(), { deadline: Date.now() + deadlineMs }, (err, res) => resolve(err ? { code: err.code, details: err.details } : { ok: res ?? {} }));
    });
  }
  close(): void {
    for (const c of this.clients.values()) c.close();
  }
}

interface Pair {
  readonly etcd: Side;
  readonly sim: Side;
  readonly handle: ServeHandle;
  readonly proc: EtcdProcess;
  /** Both sides' answers to one call, made at the same moment. */
  both(service: Service, method: string, req: Msg, deadlineMs?: number): Promise<[Outcome, Outcome]>;
}

async function withPair(body: (p: Pair) => Promise<void>): Promise<void> {
  const proc = await startEtcd({ heartbeatMs: 100, electionMs: 1000 });
  let handle: ServeHandle | undefined;
  const etcd = new Side(proc.address);
  let sim: Side | undefined;
  try {
    handle = await serve({ port: 0, etcdVersion: '3.4', peerUrls: [proc.peerUrl], clientUrls: [`http://${proc.address}`], heartbeatIntervalMs: 100, electionTicks: 10 });
    const s = new Side(handle.address);
    sim = s;
    const h = handle;
    await body({ etcd, sim: s, handle: h, proc, both: (svc, m, req, dl) => Promise.all([etcd.call(svc, m, req, dl), s.call(svc, m, req, dl)]) });
  } finally {
    etcd.close();
    sim?.close();
    await handle?.close();
    await proc.stop();
  }
}

/** Asserts both sides answered alike (`what` names the call in a failure). */
function same([etcd, sim]: [Outcome, Outcome], what: string): Outcome {
  assert.deepStrictEqual(sim, etcd, what);
  return etcd;
}

/**
 * An added member's ID includes the second each side took the MemberAdd in: when a second boundary fell
 * between the two (rarely), the simulator's ID stands for etcd's. Collects those pairs — from the caller and
 * from each MemberAdd answer's `member` — so that the rest of a run still compares exactly.
 */
class Renames {
  /** Simulator's ID → etcd's, for each added member whose IDs differ. */
  readonly simToEtcd = new Map<string, string>();
  /** Records an added member's IDs on both sides. */
  note(idE: string, idS: string): void {
    if (idE !== idS) this.simToEtcd.set(idS, idE);
  }
  get none(): boolean {
    return this.simToEtcd.size === 0;
  }

  /**
   * Both answers, ready to compare: checks the simulator lists members by ID (as etcd does); then, if any ID
   * differs, writes the simulator's IDs as etcd's and orders both sides' members by name and peer URLs, an
   * order a differing ID cannot change.
   */
  alike([etcd, sim]: [Outcome, Outcome]): [Outcome, Outcome] {
    if ('ok' in sim && Array.isArray(sim.ok['members'])) {
      const got = (sim.ok['members'] as Msg[]).map((m) => BigInt(String(m['ID'])));
      assert.deepStrictEqual(got, [...got].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)), 'the simulator lists members by ID');
    }
    const added = (o: Outcome): string | undefined => ('ok' in o ? ((o.ok['member'] as Msg | undefined)?.['ID'] as string | undefined) : undefined);
    const [e, s] = [added(etcd), added(sim)];
    if (e !== undefined && s !== undefined) this.note(e, s);
    if (this.none) return [etcd, sim];
    let text = JSON.stringify(sim);
    for (const [idS, idE] of this.simToEtcd) text = text.replaceAll(`"${idS}"`, `"${idE}"`);
    const byName = (o: Outcome): Outcome => {
      if (!('ok' in o) || !Array.isArray(o.ok['members'])) return o;
      const key = (m: Msg): string => `${String(m['name'])} ${JSON.stringify(m['peerURLs'])}`;
      return { ok: { ...o.ok, members: [...(o.ok['members'] as Msg[])].sort((x, y) => key(x).localeCompare(key(y))) } };
    };
    return [byName(etcd), byName(JSON.parse(text) as Outcome)];
  }

  /**
   * etcdctl's text, ready to compare: etcd's IDs of added members written as the simulator's (decimal and hex,
   * `hexWidth` for etcdctl's %16x), and, if any ID differs, member rows (table lines, JSON members,
   * ETCD_INITIAL_CLUSTER entries) in one order, since each side orders them by its IDs.
   */
  etcdctl(out: string, side: 'etcd' | 'sim', hexWidth = 0): string {
    if (this.none) return out;
    let t = out;
    if (side === 'etcd') {
      for (const [idS, idE] of this.simToEtcd) {
        const hex = (id: string): string => BigInt(id).toString(16).padStart(hexWidth, ' ');
        t = t.replaceAll(idE, idS).replaceAll(hex(idE), hex(idS));
      }
    }
    t = t.replace(/^ETCD_INITIAL_CLUSTER="(.*)"$/m, (_, list: string) => `ETCD_INITIAL_CLUSTER="${list.split(',').sort().join(',')}"`);
    t = t.replace(/"members":\[\{(.*?)\}\]/, (_, list: string) => `"members":[{${list.split('},{').sort().join('},{')}}]`);
    const rows = t.split('\n');
    const table = rows.flatMap((l, i) => (/^[0-9a-f]+, /.test(l) ? [i] : []));
    const sorted = table.map((i) => rows[i]!).sort();
    table.forEach((i, k) => (rows[i] = sorted[k]!));
    return rows.join('\n');
  }
}

function okOf(o: Outcome, what: string): Msg {
  assert.ok('ok' in o, `${what}: ${JSON.stringify(o)}`);
  return o.ok;
}

/**
 * What Status answers that must agree: not dbSize (the simulator's estimate), and the raft index counted from
 * `base` — the launcher's readiness probe (GET /health) costs etcd one entry the simulated member never sees.
 */
function statusCore(o: Outcome, base: number): unknown {
  const s = okOf(o, 'Status');
  return { header: s['header'], leader: s['leader'], raftEntries: Number(s['raftIndex']) - base, raftTerm: s['raftTerm'], errors: s['errors'], isLearner: s['isLearner'] };
}

/** Both sides' raft index now, to count entries from. */
async function raftBases(p: Pair): Promise<[number, number]> {
  const [e, s] = await p.both('Maintenance', 'Status', {});
  return [Number(okOf(e, 'Status')['raftIndex']), Number(okOf(s, 'Status')['raftIndex'])];
}

/** Both Status answers, compared as statusCore. */
async function sameStatus(p: Pair, [be, bs]: [number, number], what: string): Promise<void> {
  const [e, s] = await p.both('Maintenance', 'Status', {});
  assert.deepStrictEqual(statusCore(s, bs), statusCore(e, be), what);
}

/** etcdctl's output against an address (stdout and stderr) and exit code. */
function etcdctl(address: string, args: readonly string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('etcdctl', [`--endpoints=${address}`, '--dial-timeout=3s', '--command-timeout=3s', ...args], { env: { ...process.env, ETCDCTL_API: '3' } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, out }));
  });
}

test('a fresh member: MemberList, Hash (also after keys, a lease, a compaction), MoveLeader and the refusals agree with etcd 3.4.23', { skip }, async () => {
  await withPair(async (p) => {
    const bases = await raftBases(p);
    same(await p.both('Cluster', 'MemberList', {}), 'MemberList');
    same(await p.both('Maintenance', 'Hash', {}), 'Hash of a fresh member');
    const self = String((okOf(same(await p.both('Cluster', 'MemberList', {}), 'MemberList'), 'MemberList')['header'] as Msg)['member_id']);
    for (const [svc, m, req] of [
      ['Maintenance', 'MoveLeader', { targetID: self }],
      ['Maintenance', 'MoveLeader', { targetID: '5' }],
      ['Maintenance', 'MoveLeader', {}],
      ['Cluster', 'MemberRemove', { ID: '5' }],
      ['Cluster', 'MemberUpdate', { ID: '5', peerURLs: ['http://127.0.0.1:9'] }],
      ['Cluster', 'MemberPromote', { ID: '5' }],
      ['Cluster', 'MemberPromote', { ID: self }],
      ['Cluster', 'MemberRemove', { ID: self }],
      ['Cluster', 'MemberAdd', { peerURLs: [] }],
      ['Cluster', 'MemberAdd', { peerURLs: ['bad'] }],
      ['Cluster', 'MemberAdd', { peerURLs: ['http://127.0.0.1:9/path'] }],
      ['Lease', 'LeaseGrant', { ID: '4660', TTL: '100' }],
      ['KV', 'Put', { key: B('a'), value: B('1') }],
      ['KV', 'Put', { key: B('b'), value: B('2'), lease: '4660' }],
      ['KV', 'DeleteRange', { key: B('a') }],
      ['KV', 'Put', { key: B('c'), value: B('3') }],
      ['KV', 'Compact', { revision: '3' }],
      ['Maintenance', 'Hash', {}],
    ] as const) {
      same(await p.both(svc, m, req), `${m} ${JSON.stringify(req)}`);
    }
    await sameStatus(p, bases, 'Status');
  });
});

test('a learner: MemberAdd, its refusals, MemberUpdate, MemberRemove and Hash agree with etcd 3.4.23; etcdctl prints the same', { skip }, async () => {
  await withPair(async (p) => {
    const url = 'http://127.0.0.1:41997';
    const bases = await raftBases(p);
    const [e, s] = await p.both('Cluster', 'MemberAdd', { peerURLs: [url], isLearner: true });
    const ids = { idE: String((okOf(e, 'etcd MemberAdd')['member'] as Msg)['ID']), idS: String((okOf(s, 'sim MemberAdd')['member'] as Msg)['ID']) };
    const now = Math.floor(Date.now() / 1000);
    if (ids.idE !== ids.idS) assert.ok([now, now - 1, now - 2].some((t) => BigInt(ids.idS) === memberIdOf([url], '', t)), 'a second boundary fell between the two requests');
    const renames = new Renames();
    same(renames.alike([e, s]), 'MemberAdd learner');
    const self = String((okOf(e, 'MemberAdd')['header'] as Msg)['member_id']);
    const peer = p.proc.peerUrl;
    same(renames.alike(await p.both('Cluster', 'MemberAdd', { peerURLs: ['http://127.0.0.1:41996'], isLearner: true })), 'second learner');
    same(renames.alike(await p.both('Cluster', 'MemberAdd', { peerURLs: [peer] })), 'peer URL of the member');
    assert.deepStrictEqual(await p.sim.call('Cluster', 'MemberPromote', { ID: ids.idS }), await p.etcd.call('Cluster', 'MemberPromote', { ID: ids.idE }), 'promote the learner');
    assert.deepStrictEqual(await p.sim.call('Maintenance', 'MoveLeader', { targetID: ids.idS }), await p.etcd.call('Maintenance', 'MoveLeader', { targetID: ids.idE }), 'MoveLeader to the learner');
    same(renames.alike(await p.both('Cluster', 'MemberUpdate', { ID: self, peerURLs: [peer, peer.replace('127.0.0.1', 'localhost')] })), 'update own peer URLs');
    if (renames.none) same(await p.both('Maintenance', 'Hash', {}), 'Hash with a learner');
    // etcdctl's member list, as JSON and as a table.
    for (const args of [['member', 'list', '-w', 'json'], ['member', 'list']]) {
      const [a, b] = await Promise.all([etcdctl(p.proc.address, args), etcdctl(p.handle.address, args)]);
      assert.deepStrictEqual({ ...b, out: renames.etcdctl(b.out, 'sim') }, { ...a, out: renames.etcdctl(a.out, 'etcd') }, args.join(' '));
    }
    assert.deepStrictEqual(await p.sim.call('Cluster', 'MemberRemove', { ID: ids.idS }), await p.etcd.call('Cluster', 'MemberRemove', { ID: ids.idE }), 'remove the learner');
    assert.deepStrictEqual(await p.sim.call('Cluster', 'MemberRemove', { ID: ids.idS }), await p.etcd.call('Cluster', 'MemberRemove', { ID: ids.idE }), 'remove it again');
    same(await p.both('Cluster', 'MemberList', {}), 'MemberList');
    if (renames.none) same(await p.both('Maintenance', 'Hash', {}), 'Hash with a removed member');
    await sameStatus(p, bases, 'Status');
    // etcdctl move-leader to itself, and member remove of an unknown ID.
    for (const args of [['move-leader', self], ['member', 'remove', '5']]) {
      const [a, b] = await Promise.all([etcdctl(p.proc.address, args), etcdctl(p.handle.address, args)]);
      // etcdctl's retry log line carries a time stamp and a client UUID: compare the rest.
      const plain = (r: { code: number; out: string }) => ({ code: r.code, out: r.out.replace(/^\{"level".*\n/gm, '') });
      assert.deepStrictEqual(plain(b), plain(a), args.join(' '));
    }
  });
});

test('a voting MemberAdd: two members, quorum lost — the refusals, Status and MoveLeader agree with etcd 3.4.23', { skip }, async () => {
  await withPair(async (p) => {
    const bases = await raftBases(p);
    // etcdctl member add, as a user adds the member a second etcd would then start as.
    const args = ['member', 'add', 'n2', '--peer-urls=http://127.0.0.1:41999'];
    const [ce, cs] = await Promise.all([etcdctl(p.proc.address, args), etcdctl(p.handle.address, args)]);
    const [le, ls] = await p.both('Cluster', 'MemberList', {});
    const newId = (o: Outcome): string => String((okOf(o, 'MemberList')['members'] as Msg[]).find((m) => m['name'] === '')?.['ID']);
    const renames = new Renames();
    renames.note(newId(le), newId(ls));
    // etcdctl prints both IDs as %16x: padded with spaces to 16 characters (an ID may start with a zero nibble).
    assert.deepStrictEqual({ ...cs, out: renames.etcdctl(cs.out, 'sim') }, { ...ce, out: renames.etcdctl(ce.out, 'etcd', 16) }, args.join(' '));
    assert.match(ce.out, /^Member +[0-9a-f]+ added to cluster +[0-9a-f]+\n\nETCD_NAME="n2"\nETCD_INITIAL_CLUSTER="/);
    same(renames.alike([le, ls]), 'MemberList after MemberAdd');
    const self = String((okOf(le, 'MemberList')['header'] as Msg)['member_id']);
    same(renames.alike(await p.both('Cluster', 'MemberAdd', { peerURLs: ['http://127.0.0.1:41998'] })), 'second voter');
    same(renames.alike(await p.both('Cluster', 'MemberAdd', { peerURLs: ['http://127.0.0.1:41997'], isLearner: true })), 'learner');
    same(await p.both('Cluster', 'MemberRemove', { ID: '5' }), 'remove an unknown ID');
    same(await p.both('Cluster', 'MemberRemove', { ID: self }), 'remove itself');
    // A proposal never commits: etcd answers at the deadline — grpc-js's own timer, or etcd's answer to its
    // ended context, whichever reaches the client first — the simulator at once with the client's code.
    const [pe, ps] = await p.both('Cluster', 'MemberPromote', { ID: self }, 1500);
    const atDeadline = ['4 ', '2 context deadline exceeded', '14 etcdserver: request timed out'];
    assert.ok('code' in pe && atDeadline.some((prefix) => `${pe.code} ${pe.details}`.startsWith(prefix)), JSON.stringify(pe));
    assert.deepStrictEqual(ps, { code: grpc.status.DEADLINE_EXCEEDED, details: 'context deadline exceeded' });
    // Within two election timeouts (1 s each) without a quorum both step down: wait out a second deadline.
    const [qe, qs] = await p.both('Cluster', 'MemberUpdate', { ID: self, peerURLs: [p.proc.peerUrl] }, 700);
    assert.ok('code' in qe && atDeadline.some((prefix) => `${qe.code} ${qe.details}`.startsWith(prefix)), JSON.stringify(qe));
    assert.deepStrictEqual(qs, { code: grpc.status.DEADLINE_EXCEEDED, details: 'context deadline exceeded' });
    same(await p.both('Maintenance', 'MoveLeader', { targetID: self }), 'MoveLeader without leadership');
    await sameStatus(p, bases, 'Status without a leader');
    same(renames.alike(await p.both('Cluster', 'MemberList', {})), 'MemberList');
  });
});

test('serve --name / --initial-advertise-peer-urls / --advertise-client-urls / --initial-cluster-token: MemberList reports them, the IDs derive from them', async () => {
  const { parseServeFlags, SERVE_FLAG_DEFAULTS } = await import('../../src/cli/serve.js');
  const flags = {
    ...SERVE_FLAG_DEFAULTS,
    listenClientUrls: 'http://127.0.0.1:0',
    name: 'n1',
    initialAdvertisePeerUrls: 'http://127.0.0.1:2390,http://localhost:2390',
    advertiseClientUrls: 'http://127.0.0.1:2391',
    initialClusterToken: 'tok',
    etcdVersion: '3.4',
  };
  const opts = parseServeFlags(flags, (m) => assert.fail(`no warning expected: ${m}`));
  const h = await serve(opts);
  const side = new Side(h.address);
  try {
    const id = memberIdOf(['http://127.0.0.1:2390', 'http://localhost:2390'], 'tok');
    const list = okOf(await side.call('Cluster', 'MemberList', {}), 'MemberList');
    assert.deepStrictEqual(list['members'], [{ ID: String(id), name: 'n1', peerURLs: ['http://127.0.0.1:2390', 'http://localhost:2390'], clientURLs: ['http://127.0.0.1:2391'], isLearner: false }]);
    const status = okOf(await side.call('Maintenance', 'Status', {}), 'Status');
    assert.equal(status['leader'], String(id));
    assert.equal((status['header'] as Msg)['member_id'], String(id));
  } finally {
    side.close();
    await h.close();
  }
});
