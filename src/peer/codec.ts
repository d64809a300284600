/**
 * The peer protocol's frames (the role of etcd's rafthttp message encoding; its wire format is not modelled,
 * only what travels): a 4-byte big-endian length, then one UTF-8 JSON object — either the dialer's hello
 * (which member it is, of which cluster, to which member) or one Raft message (src/raft/messages.ts) with
 * bigints as decimal strings and bytes as base64 — or, alone on a connection of its own, a question and
 * its answer (a joining member's members query; a follower's lease renewal or TimeToLive for the leader). Decoding checks every field's type and range and refuses
 * anything else with a PeerFrameError: a peer that sends garbage loses its connection and changes nothing.
 * A frame is bounded (MAX_FRAME_BYTES), so memory per connection is too. A leader's MsgSnap travels on a
 * connection of its own (etcd's POST /raft/snapshot): a `snap` frame — the message, its cluster and the
 * size of the db that follows — then the db's bytes as they are, streamed, never one frame.
 */
import type { ConfChange, ConfState, Entry, Message, MessageType, NodeId, Snapshot } from '../raft/index.js';

/** Largest frame accepted: a MsgApp of many large entries fits (a snapshot's db is streamed after its frame, never in one). */
export const MAX_FRAME_BYTES = 512 * 1024 * 1024;

export class PeerFrameError extends Error {}

/** The first frame on a connection: who dials whom, in which cluster (etcd checks the cluster ID, X-Etcd-Cluster-ID). */
export interface Hello {
  readonly kind: 'hello';
  readonly from: NodeId;
  readonly to: NodeId;
  readonly clusterId: bigint;
}

/** One member as a members answer lists it. */
export interface ListedMember {
  readonly id: NodeId;
  readonly peerUrls: readonly string[];
}

/**
 * A member about to join asks a peer for the cluster (etcd's GET /members on the peer port, with
 * --initial-cluster-state existing): the first and only frame of its connection. The peer answers with
 * the cluster's ID and members, then closes.
 */
export type MembersQuery = { readonly kind: 'members?' };
export type MembersAnswer = { readonly kind: 'members'; readonly clusterId: bigint; readonly members: readonly ListedMember[] };

/**
 * A follower forwards a lease renewal or TimeToLive to its leader (etcd's POST /leases and /leases/internal
 * on the leader's peer URL): the first and only frame of its connection, answered once, then closed.
 */
export interface LeaseQuery {
  readonly kind: 'lease?';
  readonly op: 'renew' | 'timeToLive';
  /** The lease ID, a signed int64 as the client sent it. */
  readonly id: bigint;
  /** TimeToLive's `keys`: list the attached keys too. */
  readonly keys: boolean;
}

/**
 * The leader's answer: 'ok' with the TTL (a renewal's granted TTL, or TimeToLive's remaining seconds), the
 * granted TTL and the keys asked for; 'notFound' (etcd's 404); 'refused' with etcd's words (400: not a
 * primary lessor; 408: the apply did not catch up) — the follower then asks again.
 */
export type LeaseAnswer =
  | { readonly kind: 'lease'; readonly status: 'ok'; readonly ttl: number; readonly grantedTTL: number; readonly keys: readonly Uint8Array[] }
  | { readonly kind: 'lease'; readonly status: 'notFound' }
  | { readonly kind: 'lease'; readonly status: 'refused'; readonly reason: string };

/** The answer to a stream's hello from a member the cluster removed (etcd's 410 Gone): it stops itself. */
export type RemovedAnswer = { readonly kind: 'removed' };


/**
 * The first and only frame of a snapshot's connection: the leader's MsgSnap for the member dialed, in
 * this cluster, then `size` bytes of the db (the member's backend file, etcd's merged snapshot message).
 */
export type SnapHeader = { readonly kind: 'snap'; readonly clusterId: bigint; readonly msg: Message; readonly size: number };

export type Frame = Hello | { readonly kind: 'msg'; readonly msg: Message } | MembersQuery | MembersAnswer | LeaseQuery | LeaseAnswer | RemovedAnswer | SnapHeader;

/** Members a members answer may list (etcd's clusters have a handful). */
const MAX_LISTED_MEMBERS = 1000;

const MESSAGE_TYPES: ReadonlySet<string> = new Set<MessageType>([
  'MsgApp',
  'MsgAppResp',
  'MsgVote',
  'MsgVoteResp',
  'MsgPreVote',
  'MsgPreVoteResp',
  'MsgHeartbeat',
  'MsgHeartbeatResp',
  'MsgSnap',
  'MsgProp',
  'MsgTransferLeader',
  'MsgTimeoutNow',
  'MsgReadIndex',
  'MsgReadIndexResp',
]);

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder('utf-8', { fatal: true });

function b64(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
}

function jsonOf(f: Frame): unknown {
  if (f.kind === 'hello') return { kind: 'hello', from: String(f.from), to: String(f.to), clusterId: String(f.clusterId) };
  if (f.kind === 'members?') return { kind: 'members?' };
  if (f.kind === 'members') return { kind: 'members', clusterId: String(f.clusterId), members: f.members.map((m) => ({ id: String(m.id), peerUrls: [...m.peerUrls] })) };
  if (f.kind === 'removed') return { kind: 'removed' };
  if (f.kind === 'lease?') return { kind: 'lease?', op: f.op, id: String(f.id), keys: f.keys };
  if (f.kind === 'lease') {
    if (f.status === 'ok') return { kind: 'lease', status: 'ok', ttl: f.ttl, grantedTTL: f.grantedTTL, keys: f.keys.map(b64) };
    return f.status === 'notFound' ? { kind: 'lease', status: 'notFound' } : { kind: 'lease', status: 'refused', reason: f.reason };
  }
  if (f.kind === 'snap') return { kind: 'snap', clusterId: String(f.clusterId), size: f.size, ...messageJson(f.msg) };
  return { kind: 'msg', ...messageJson(f.msg) };
}

function messageJson(m: Message): Record<string, unknown> {
  return {
    type: m.type,
    from: String(m.from),
    to: String(m.to),
    term: String(m.term),
    logTerm: m.logTerm === undefined ? undefined : String(m.logTerm),
    index: m.index,
    entries: m.entries?.map(entryJson),
    commit: m.commit,
    reject: m.reject,
    rejectHint: m.rejectHint,
    snapshot: m.snapshot === undefined ? undefined : { index: m.snapshot.index, term: String(m.snapshot.term), conf: confJson(m.snapshot.conf), data: b64(m.snapshot.data) },
    context: m.context,
  };
}

function entryJson(e: Entry): unknown {
  return { index: e.index, term: String(e.term), type: e.type, data: b64(e.data), conf: e.conf === undefined ? undefined : { type: e.conf.type, id: String(e.conf.id), context: e.conf.context === undefined ? undefined : b64(e.conf.context) } };
}

function confJson(c: ConfState): unknown {
  return { voters: c.voters.map(String), learners: c.learners.map(String) };
}

/** One frame, length prefix included. */
export function encodeFrame(f: Frame): Uint8Array {
  const body = utf8.encode(JSON.stringify(jsonOf(f)));
  if (body.length > MAX_FRAME_BYTES) throw new PeerFrameError(`peer frame of ${body.length} bytes is over ${MAX_FRAME_BYTES}`);
  const out = new Uint8Array(4 + body.length);
  new DataView(out.buffer).setUint32(0, body.length);
  out.set(body, 4);
  return out;
}

// ---- decoding, every field checked ----

type Obj = Record<string, unknown>;

function obj(v: unknown, what: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new PeerFrameError(`${what}: not an object`);
  return v as Obj;
}

function u64(v: unknown, what: string): bigint {
  if (typeof v !== 'string' || !/^(0|[1-9][0-9]{0,19})$/.test(v)) throw new PeerFrameError(`${what}: not a uint64`);
  const n = BigInt(v);
  if (n >= 1n << 64n) throw new PeerFrameError(`${what}: not a uint64`);
  return n;
}

function i64(v: unknown, what: string): bigint {
  if (typeof v !== 'string' || !/^(0|-?[1-9][0-9]{0,18})$/.test(v)) throw new PeerFrameError(`${what}: not an int64`);
  const n = BigInt(v);
  if (n >= 1n << 63n || n < -(1n << 63n)) throw new PeerFrameError(`${what}: not an int64`);
  return n;
}

/** A TTL in seconds as the lessor answers it (etcd's largest is 9e9 s; -1 for none). */
function ttl(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < -1) throw new PeerFrameError(`${what}: not a TTL`);
  return v;
}

function index(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new PeerFrameError(`${what}: not an index`);
  return v;
}

function bytes(v: unknown, what: string): Uint8Array {
  if (typeof v !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(v) || v.length % 4 !== 0) throw new PeerFrameError(`${what}: not base64`);
  return new Uint8Array(Buffer.from(v, 'base64'));
}

function opt<T>(v: unknown, read: (v: unknown, what: string) => T, what: string): T | undefined {
  return v === undefined ? undefined : read(v, what);
}

function str(v: unknown, what: string): string {
  if (typeof v !== 'string') throw new PeerFrameError(`${what}: not a string`);
  return v;
}

function list<T>(v: unknown, read: (v: unknown, what: string) => T, what: string): T[] {
  if (!Array.isArray(v)) throw new PeerFrameError(`${what}: not a list`);
  return v.map((x, i) => read(x, `${what}[${i}]`));
}

function confChange(v: unknown, what: string): ConfChange {
  const o = obj(v, what);
  if (o['type'] !== 'add' && o['type'] !== 'addLearner' && o['type'] !== 'remove' && o['type'] !== 'update') throw new PeerFrameError(`${what}.type: unknown`);
  const context = opt(o['context'], bytes, `${what}.context`);
  return { type: o['type'], id: u64(o['id'], `${what}.id`), ...(context === undefined ? {} : { context }) };
}

function entry(v: unknown, what: string): Entry {
  const o = obj(v, what);
  if (o['type'] !== 'normal' && o['type'] !== 'conf') throw new PeerFrameError(`${what}.type: unknown`);
  const conf = opt(o['conf'], confChange, `${what}.conf`);
  if ((o['type'] === 'conf') !== (conf !== undefined)) throw new PeerFrameError(`${what}: a conf entry carries exactly one conf change`);
  return { index: index(o['index'], `${what}.index`), term: u64(o['term'], `${what}.term`), type: o['type'], data: bytes(o['data'], `${what}.data`), ...(conf === undefined ? {} : { conf }) };
}

function snapshot(v: unknown, what: string): Snapshot {
  const o = obj(v, what);
  const c = obj(o['conf'], `${what}.conf`);
  return {
    index: index(o['index'], `${what}.index`),
    term: u64(o['term'], `${what}.term`),
    conf: { voters: list(c['voters'], u64, `${what}.conf.voters`), learners: list(c['learners'], u64, `${what}.conf.learners`) },
    data: bytes(o['data'], `${what}.data`),
  };
}

/** A frame's body (without its length prefix), checked. */
export function decodeFrame(body: Uint8Array): Frame {
  let v: unknown;
  try {
    v = JSON.parse(fromUtf8.decode(body));
  } catch {
    throw new PeerFrameError('peer frame: not JSON');
  }
  const o = obj(v, 'peer frame');
  if (o['kind'] === 'hello') return { kind: 'hello', from: u64(o['from'], 'from'), to: u64(o['to'], 'to'), clusterId: u64(o['clusterId'], 'clusterId') };
  if (o['kind'] === 'members?') return { kind: 'members?' };
  if (o['kind'] === 'removed') return { kind: 'removed' };
  if (o['kind'] === 'members') {
    const listed = list(o['members'], (x, w) => {
      const m = obj(x, w);
      return { id: u64(m['id'], `${w}.id`), peerUrls: list(m['peerUrls'], str, `${w}.peerUrls`) };
    }, 'members');
    if (listed.length > MAX_LISTED_MEMBERS) throw new PeerFrameError('members: too many');
    return { kind: 'members', clusterId: u64(o['clusterId'], 'clusterId'), members: listed };
  }
  if (o['kind'] === 'lease?') {
    if (o['op'] !== 'renew' && o['op'] !== 'timeToLive') throw new PeerFrameError('op: unknown');
    if (typeof o['keys'] !== 'boolean') throw new PeerFrameError('keys: not a boolean');
    return { kind: 'lease?', op: o['op'], id: i64(o['id'], 'id'), keys: o['keys'] };
  }
  if (o['kind'] === 'lease') {
    if (o['status'] === 'ok') return { kind: 'lease', status: 'ok', ttl: ttl(o['ttl'], 'ttl'), grantedTTL: ttl(o['grantedTTL'], 'grantedTTL'), keys: list(o['keys'], bytes, 'keys') };
    if (o['status'] === 'notFound') return { kind: 'lease', status: 'notFound' };
    if (o['status'] === 'refused') return { kind: 'lease', status: 'refused', reason: str(o['reason'], 'reason') };
    throw new PeerFrameError('status: unknown');
  }
  if (o['kind'] === 'snap') {
    const msg = messageOf(o);
    if (msg.type !== 'MsgSnap' || msg.snapshot === undefined) throw new PeerFrameError('snap: not a MsgSnap with its snapshot');
    return { kind: 'snap', clusterId: u64(o['clusterId'], 'clusterId'), msg, size: index(o['size'], 'size') };
  }
  if (o['kind'] !== 'msg') throw new PeerFrameError('peer frame: unknown kind');
  return { kind: 'msg', msg: messageOf(o) };
}

function messageOf(o: Obj): Message {
  const type = o['type'];
  if (typeof type !== 'string' || !MESSAGE_TYPES.has(type)) throw new PeerFrameError('peer frame: unknown message type');
  if (o['reject'] !== undefined && typeof o['reject'] !== 'boolean') throw new PeerFrameError('reject: not a boolean');
  if (o['context'] !== undefined && typeof o['context'] !== 'string') throw new PeerFrameError('context: not a string');
  const fields = {
    logTerm: opt(o['logTerm'], u64, 'logTerm'),
    index: opt(o['index'], index, 'index'),
    entries: opt(o['entries'], (x, w) => list(x, entry, w), 'entries'),
    commit: opt(o['commit'], index, 'commit'),
    reject: o['reject'] as boolean | undefined,
    rejectHint: opt(o['rejectHint'], index, 'rejectHint'),
    snapshot: opt(o['snapshot'], snapshot, 'snapshot'),
    context: o['context'] as string | undefined,
  };
  const msg: Record<string, unknown> = { type, from: u64(o['from'], 'from'), to: u64(o['to'], 'to'), term: u64(o['term'], 'term') };
  for (const [k, val] of Object.entries(fields)) if (val !== undefined) msg[k] = val;
  return msg as unknown as Message;
}

/**
 * Cuts a byte stream into frames. push() returns the complete frames' bodies; a length over the bound is
 * refused at once, before its body is buffered. A body is kept as the chunks that brought it and joined
 * once, when complete: a snapshot arriving in many chunks costs its size, not its size times its chunks.
 */
export class FrameReader {
  private readonly header = new Uint8Array(4);
  private headerFill = 0;
  /** The body being read: its length, and its chunks so far. */
  private bodyLen = -1;
  private chunks: Uint8Array[] = [];
  private bodyFill = 0;

  /** Bytes after the last frame push() was allowed to return (see `max`), not read as frames. */
  private rest: Uint8Array = new Uint8Array(0);

  /** The frames' bodies `chunk` completes, at most `max` of them: the bytes after the last are kept for takeRest(). */
  push(chunk: Uint8Array, max = Infinity): Uint8Array[] {
    const out: Uint8Array[] = [];
    let at = 0;
    while (at < chunk.length) {
      if (out.length >= max) {
        this.rest = chunk.slice(at);
        break;
      }
      if (this.bodyLen < 0) {
        const n = Math.min(4 - this.headerFill, chunk.length - at);
        this.header.set(chunk.subarray(at, at + n), this.headerFill);
        this.headerFill += n;
        at += n;
        if (this.headerFill < 4) break;
        const len = new DataView(this.header.buffer).getUint32(0);
        if (len > MAX_FRAME_BYTES) throw new PeerFrameError(`peer frame of ${len} bytes is over ${MAX_FRAME_BYTES}`);
        this.bodyLen = len;
        this.headerFill = 0;
      }
      const n = Math.min(this.bodyLen - this.bodyFill, chunk.length - at);
      if (n > 0) this.chunks.push(chunk.slice(at, at + n));
      this.bodyFill += n;
      at += n;
      if (this.bodyFill === this.bodyLen) {
        const body = new Uint8Array(this.bodyLen);
        let o = 0;
        for (const c of this.chunks) {
          body.set(c, o);
          o += c.length;
        }
        out.push(body);
        this.bodyLen = -1;
        this.bodyFill = 0;
        this.chunks = [];
      }
    }
    return out;
  }

  /** What push() left unread after its last frame (once). */
  takeRest(): Uint8Array {
    const r = this.rest;
    this.rest = new Uint8Array(0);
    return r;
  }
}
