/**
 * Three Raft members (src/raft) joined by the peer transport (src/peer/transport.ts) over loopback TCP, each
 * driven by its Raft loop (src/raft/loop.ts) on a real clock: they elect one leader, replicate what any
 * of them proposes, keep electing and serving when the leader's process is gone (its transport closed, its
 * loop stopped, its unsaved state lost), and the member restarted from its data dir (WAL and snap files,
 * src/peer/wal_persistence.ts) rejoins and catches up — the Raft checker runs after every apply. A real-time test, bounded: each wait is for a condition,
 * re-checked on every event, with a deadline. Also: a peer stream that sends garbage or belongs to
 * another cluster is dropped and delivers nothing.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, test } from 'node:test';

import { FrameReader, decodeFrame, encodeFrame, PeerFrameError } from '../../src/peer/codec.js';
import { RaftLoop } from '../../src/raft/index.js';
import { PeerTransport } from '../../src/peer/transport.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WalPersistence } from '../../src/peer/wal_persistence.js';
import { RaftNode, RaftNodeChecker, bootstrapStorage, type Message, type NodeId, type RaftStorage } from '../../src/raft/index.js';
import { dataDirLayout, type DataDirLayout } from '../../src/storage/index.js';
import { RealClock, SimRandom, VirtualClock } from '../../src/sim/index.js';
import { freePort } from '../../src/diff/etcd_process.js';

const clock = new RealClock({ unref: true });
after(() => clock.close());
const utf8 = new TextEncoder();
const CLUSTER = 0xc1n;
/** Long enough that a loaded machine does not miss an election timeout's worth of heartbeats. */
const HEARTBEAT_MS = 25;

interface Member {
  readonly id: NodeId;
  loop: RaftLoop;
  transport: PeerTransport;
  readonly dataDir: DataDirLayout;
  port: number;
  values: string[];
  up: boolean;
}

/** Wakes the waits whenever something happens. */
const waiters = new Set<() => void>();
function changed(): void {
  for (const w of [...waiters]) w();
}
function waitFor(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (!cond()) return;
      waiters.delete(check);
      clock.cancel(timer);
      resolve();
    };
    const timer = clock.setTimer(clock.now() + ms, () => {
      waiters.delete(check);
      reject(new Error(`timed out waiting for ${what}`));
    });
    waiters.add(check);
    check();
  });
}

const checker = new RaftNodeChecker();
const members = new Map<NodeId, Member>();
const IDS = [1n, 2n, 3n];

const root = mkdtempSync(join(tmpdir(), 'etcdsim-raft-over-tcp-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** Starts member `id` on its data dir: a new one from `boot`, or what the dir holds. */
async function startMember(id: NodeId, boot: RaftStorage | undefined, port: number, incarnation: number): Promise<Member> {
  const dataDir = dataDirLayout(join(root, `m${id}`));
  let disk: WalPersistence;
  let storage: RaftStorage;
  if (boot !== undefined) {
    disk = WalPersistence.create(dataDir, { nodeId: id, clusterId: CLUSTER }, boot);
    storage = boot;
  } else {
    ({ persistence: disk, storage } = WalPersistence.open(dataDir));
  }
  // The state machine starts from the snapshot on disk; the node hands over the entries after it.
  const snap = storage.snapshot.data;
  const m = { id, dataDir, port, values: snap.length === 0 ? [] : (JSON.parse(new TextDecoder().decode(snap)) as string[]), up: true } as Member;
  const node = new RaftNode({ id, random: new SimRandom(7).fork(`m${id}-${incarnation}`), electionTicks: 10, preVote: true, checkQuorum: true }, storage);
  m.transport = new PeerTransport({
    id,
    clusterId: CLUSTER,
    listen: { host: '127.0.0.1', port },
    clock,
    deliver: (msg) => m.loop.step(msg),
  });
  m.port = await m.transport.start();
  m.loop = new RaftLoop({
    node,
    clock,
    heartbeatMs: HEARTBEAT_MS,
    persistence: disk,
    send: (msg: Message) => m.transport.send(msg),
    apply: (entries, snap) => {
      if (snap !== undefined) m.values = JSON.parse(new TextDecoder().decode(snap.data)) as string[];
      for (const e of entries) if (e.type === 'normal' && e.data.length > 0) m.values.push(new TextDecoder().decode(e.data));
      checker.appliedEntries(id, entries);
      checker.check([...members.values()].filter((x) => x.up).map((x) => x.loop.node));
      changed();
    },
    snapshotData: () => utf8.encode(JSON.stringify(m.values)),
    snapshotCount: 20,
    catchUpEntries: 5,
    onSoftState: changed,
  });
  members.set(id, m);
  return m;
}

function connectAll(): void {
  for (const a of members.values()) for (const b of members.values()) if (a.up && a !== b) a.transport.addPeer(b.id, { host: '127.0.0.1', port: b.port });
}

function leaders(): Member[] {
  return [...members.values()].filter((m) => m.up && m.loop.node.role === 'leader');
}

after(() => {
  for (const m of members.values()) {
    m.loop.stop();
    m.transport.close();
  }
});

test('three members over TCP elect one leader, replicate, survive losing the leader and take it back', async () => {
  const boot = bootstrapStorage(IDS.map((id) => ({ id })));
  for (const id of IDS) await startMember(id, boot, 0, 0);
  connectAll();
  for (const m of members.values()) m.loop.start();
  await waitFor('a leader every member knows', () => leaders().length === 1 && [...members.values()].every((m) => m.loop.node.leader === leaders()[0]!.id));

  // Proposals at any member reach the leader and apply everywhere.
  for (let i = 0; i < 30; i++) assert.ok([...members.values()][i % 3]!.loop.propose(utf8.encode(`a${i}`)));
  const all = (n: number) => (): boolean => [...members.values()].filter((m) => m.up).every((m) => m.values.length === n);
  await waitFor('30 values applied on every member', all(30));

  // The leader's process goes away: what it saved stays, its connections close.
  const old = leaders()[0]!;
  old.up = false;
  old.loop.stop();
  old.transport.close();
  await waitFor('a new leader', () => leaders().length === 1);
  const now = leaders()[0]!;
  assert.notEqual(now.id, old.id);
  for (let i = 0; i < 10; i++) assert.ok(now.loop.propose(utf8.encode(`b${i}`)));
  await waitFor('40 values on the two left', all(40));

  // Restarted from its data dir on its own port, it rejoins with its identity and catches up.
  const back = await startMember(old.id, undefined, old.port, 1);
  assert.ok(back.loop.node.term >= 2n, 'its term came back from the WAL');
  connectAll();
  back.loop.start();
  await waitFor('the restarted member caught up', () => back.values.length === 40 && back.loop.node.leader !== 0n);
  const values = back.values;
  for (const m of members.values()) assert.deepEqual(m.values, values);
  checker.assertHolds();
});

test('a peer stream of another cluster, for another member, or of garbage is dropped and delivers nothing', async () => {
  const delivered: Message[] = [];
  const refused: string[] = [];
  const t = new PeerTransport({ id: 9n, clusterId: CLUSTER, listen: { host: '127.0.0.1', port: 0 }, clock, deliver: (m) => delivered.push(m), refused: (r) => refused.push(r) });
  const port = await t.start();
  const msg: Message = { type: 'MsgHeartbeat', from: 8n, to: 9n, term: 2n, commit: 1 };
  const tries: Uint8Array[][] = [
    [encodeFrame({ kind: 'hello', from: 8n, to: 9n, clusterId: 0xbadn }), encodeFrame({ kind: 'msg', msg })],
    [encodeFrame({ kind: 'hello', from: 8n, to: 7n, clusterId: CLUSTER }), encodeFrame({ kind: 'msg', msg })],
    [encodeFrame({ kind: 'hello', from: 8n, to: 9n, clusterId: CLUSTER }), Uint8Array.from([0, 0, 0, 3, 0x7b, 0x7d, 0x7d])],
    [encodeFrame({ kind: 'msg', msg })],
    [Uint8Array.from([0xff, 0xff, 0xff, 0xff])],
  ];
  for (const frames of tries) {
    const s = net.connect({ host: '127.0.0.1', port });
    await new Promise<void>((resolve) => {
      s.on('connect', () => {
        for (const f of frames) s.write(f);
      });
      s.on('error', () => undefined);
      s.on('close', () => resolve());
    });
  }
  t.close();
  assert.deepEqual(delivered, []);
  assert.equal(refused.length, tries.length);
  assert.match(refused[0]!, /cluster ID mismatch/);
});

/** Resolves once `cond()` holds, looking every 5 ms; fails after 10 s. */
async function condition(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; !cond(); i++) {
    if (i > 2000) assert.fail(`not within 10 s: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

test('a stream refused because its peer was not up yet is dialed again once that peer dials in, not after the pause', async () => {
  // The redial pause runs on a virtual clock that never moves: only the peer's own stream can bring ours up.
  const paused = new VirtualClock();
  const [pa, pb] = [await freePort(), await freePort()];
  let up = false;
  const a = new PeerTransport({ id: 1n, clusterId: CLUSTER, listen: { host: '127.0.0.1', port: pa }, clock: paused, deliver: () => {}, peerActive: (id, on) => (up = id === 2n && on) });
  await a.start();
  a.addPeer(2n, { host: '127.0.0.1', port: pb });
  await condition(() => paused.pending() === 1, 'the refused stream waits out its pause');
  assert.equal(up, false);
  const b = new PeerTransport({ id: 2n, clusterId: CLUSTER, listen: { host: '127.0.0.1', port: pb }, clock: paused, deliver: () => {} });
  await b.start();
  b.addPeer(1n, { host: '127.0.0.1', port: pa });
  try {
    await condition(() => up, "member 1's stream to member 2 up");
    assert.equal(paused.now(), 0);
  } finally {
    a.close();
    b.close();
  }
});

test('the frame codec round-trips messages and refuses what is not one', () => {
  const msg: Message = {
    type: 'MsgApp',
    from: 0xffffffffffffffffn,
    to: 2n,
    term: 5n,
    logTerm: 4n,
    index: 10,
    commit: 9,
    entries: [{ index: 11, term: 5n, type: 'conf', data: utf8.encode('ctx'), conf: { type: 'addLearner', id: 3n, context: utf8.encode('n') } }],
  };
  const reader = new FrameReader();
  const bytes = encodeFrame({ kind: 'msg', msg });
  // Byte by byte, as a slow network may deliver it.
  const bodies = [...bytes].flatMap((b) => reader.push(Uint8Array.of(b)));
  assert.equal(bodies.length, 1);
  assert.deepEqual(decodeFrame(bodies[0]!), { kind: 'msg', msg });
  // A follower's lease question and the leader's answers (lease_forward.ts).
  const lease = [
    { kind: 'lease?', op: 'renew', id: -(1n << 63n), keys: false },
    { kind: 'lease?', op: 'timeToLive', id: (1n << 63n) - 1n, keys: true },
    { kind: 'lease', status: 'ok', ttl: 9_000_000_000, grantedTTL: 9_000_000_000, keys: [utf8.encode('k'), new Uint8Array(0)] },
    { kind: 'lease', status: 'notFound' },
    { kind: 'lease', status: 'refused', reason: 'not a primary lessor' },
  ] as const;
  for (const f of lease) assert.deepEqual(decodeFrame(encodeFrame(f).subarray(4)), f);
  const bad = [
    '{"kind":"lease?","op":"renew","id":"9223372036854775808","keys":false}',
    '{"kind":"lease?","op":"grant","id":"1","keys":false}',
    '{"kind":"lease?","op":"renew","id":"1"}',
    '{"kind":"lease","status":"ok","ttl":-2,"grantedTTL":1,"keys":[]}',
    '{"kind":"lease","status":"maybe"}',
    '{"kind":"msg","type":"MsgNope","from":"1","to":"2","term":"1"}',
    '{"kind":"msg","type":"MsgApp","from":"-1","to":"2","term":"1"}',
    '{"kind":"msg","type":"MsgApp","from":"18446744073709551616","to":"2","term":"1"}',
    '{"kind":"msg","type":"MsgApp","from":"1","to":"2","term":"1","index":1.5}',
    '{"kind":"msg","type":"MsgApp","from":"1","to":"2","term":"1","entries":[{"index":1,"term":"1","type":"conf","data":""}]}',
    '{"kind":"msg","type":"MsgApp","from":"1","to":"2","term":"1","entries":[{"index":1,"term":"1","type":"normal","data":"***"}]}',
    '[1]',
    'not json',
  ];
  for (const b of bad) assert.throws(() => decodeFrame(utf8.encode(b)), PeerFrameError, b);
});
