/**
 * The peer transport on --listen-peer-urls (the role of etcd's rafthttp): each member dials every other
 * member's peer URL and keeps one stream to it, over which its Raft messages go one way, in order; it
 * accepts the others' streams on its own listener. A stream opens with a hello naming the dialer, the
 * member dialed and the cluster: a stream for another member or another cluster is refused, as etcd refuses
 * a mismatched X-Etcd-Cluster-ID, and so is any frame that does not decode (codec.ts) — the connection is
 * dropped and nothing is delivered. Messages to a peer that cannot be reached are dropped, as rafthttp
 * drops them when its buffer is full or the stream is down (Raft resends what matters); a stream that
 * breaks is dialed again after a pause, on the clock given (no timer of its own). Memory is bounded: at
 * most MAX_QUEUED messages wait for a stream, at most MAX_UNSENT_BYTES sit in a socket's buffer, and a
 * frame read is bounded by the codec.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import type { Message, NodeId } from '../raft/index.js';
import type { Clock, TimerHandle } from '../sim/index.js';
import { FrameReader, PeerFrameError, decodeFrame, encodeFrame, type Frame, type LeaseAnswer, type LeaseQuery, type MembersAnswer, type MembersQuery } from './codec.js';
import { SnapshotReceiver, streamSnapshot, type SnapshotDb } from './snapshot_stream.js';

/** Messages waiting while a stream is being dialed (rafthttp's streamBufSize). */
const MAX_QUEUED = 4096;
/** Bytes a peer may leave unread in our socket before messages to it are dropped. */
const MAX_UNSENT_BYTES = 64 * 1024 * 1024;
/** Pause before dialing a broken stream again. */
const REDIAL_MS = 100;

export interface PeerAddress {
  readonly host: string;
  readonly port: number;
}

/** TLS on the peer port, as --peer-cert-file / --peer-key-file / --peer-trusted-ca-file ask. */
export interface PeerTls {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** Peers' certificates must be signed by it (--peer-client-cert-auth), and ours is checked against it. */
  readonly ca?: Buffer;
}

export interface PeerTransportOptions {
  readonly id: NodeId;
  readonly clusterId: bigint;
  readonly listen: PeerAddress;
  readonly clock: Clock;
  readonly tls?: PeerTls;
  /** A message from a peer, checked. */
  deliver(m: Message): void;
  /** A stream to or from a peer became active or inactive (etcd logs "peer became active/inactive"). */
  peerActive?(id: NodeId, active: boolean): void;
  /** A peer's stream was refused (garbage, another cluster): what etcd would log. */
  refused?(reason: string): void;
  /** The cluster as a joining member asks for it (its members answer); undefined: such a query is refused. */
  members?(): MembersAnswer;
  /** Whether the cluster removed member `id`: its stream is answered "removed" and closed (etcd's 410 Gone). */
  isRemoved?(id: NodeId): boolean;
  /** A peer answered our stream "removed": this member was removed from the cluster. */
  removedFromCluster?(): void;
  /** A follower's lease renewal or TimeToLive, answered by this member's lessor; undefined: refused. */
  lease?(q: LeaseQuery): Promise<LeaseAnswer>;
  /** The db to stream after this MsgSnap; undefined (or no such option): the message goes alone, in one frame. */
  snapshotDb?(m: Message): SnapshotDb | undefined;
  /** Where a received snapshot's db is written (member/snap); without it a snapshot connection is refused. */
  readonly snapDir?: string;
}

interface Outbound {
  readonly id: NodeId;
  address: PeerAddress;
  socket: net.Socket | undefined;
  connected: boolean;
  queue: Uint8Array[];
  redial: TimerHandle | undefined;
  /** The snapshot connection in flight, if any. */
  snapshot: net.Socket | undefined;
}

export class PeerTransport {
  private readonly peers = new Map<NodeId, Outbound>();
  /** Accepted connections, with the member each stream's hello named (undefined before it). */
  private readonly inbound = new Map<net.Socket, NodeId | undefined>();
  private server: net.Server | undefined;
  private closed = false;

  constructor(private readonly opts: PeerTransportOptions) {}

  /** Listens on the peer URL; resolves with the bound port (for port 0). */
  async start(): Promise<number> {
    const onSocket = (s: net.Socket): void => this.accept(s);
    const t = this.opts.tls;
    const server =
      t === undefined ? net.createServer(onSocket) : tls.createServer({ cert: t.cert, key: t.key, ...(t.ca === undefined ? {} : { ca: t.ca, requestCert: true, rejectUnauthorized: true }) }, onSocket);
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.opts.listen.port, this.opts.listen.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return (server.address() as net.AddressInfo).port;
  }

  /** A member to keep a stream to (from --initial-cluster, or a member added later). */
  addPeer(id: NodeId, address: PeerAddress): void {
    if (id === this.opts.id) return;
    const known = this.peers.get(id);
    if (known !== undefined) {
      known.address = address;
      return;
    }
    const p: Outbound = { id, address, socket: undefined, connected: false, queue: [], redial: undefined, snapshot: undefined };
    this.peers.set(id, p);
    this.dial(p);
  }

  /** A member's peer URL changed (etcd's UpdatePeer): its stream is dialed again, on the new address. */
  updatePeer(id: NodeId, address: PeerAddress): void {
    const p = this.peers.get(id);
    if (p === undefined) return this.addPeer(id, address);
    if (p.address.host === address.host && p.address.port === address.port) return;
    p.address = address;
    p.socket?.destroy(); // its close dials again after the pause
  }

  removePeer(id: NodeId): void {
    const p = this.peers.get(id);
    if (p === undefined) return;
    this.peers.delete(id);
    if (p.redial !== undefined) this.opts.clock.cancel(p.redial);
    p.socket?.destroy();
    // Its streams to us close too: a removed member that dials again is told it was removed.
    for (const [s, from] of this.inbound) if (from === id) s.destroy();
    p.snapshot?.destroy();
  }

  send(m: Message): void {
    const p = this.peers.get(m.to);
    if (p === undefined || this.closed) return;
    if (m.type === 'MsgSnap' && this.opts.snapshotDb !== undefined) {
      this.sendSnapshot(p, m);
      return;
    }
    const frame = encodeFrame({ kind: 'msg', msg: m });
    if (p.connected && p.socket !== undefined) {
      if (p.socket.writableLength > MAX_UNSENT_BYTES) return;
      p.socket.write(frame);
    } else if (p.queue.length < MAX_QUEUED) {
      p.queue.push(frame);
    }
  }

  close(): void {
    this.closed = true;
    for (const id of [...this.peers.keys()]) this.removePeer(id);
    for (const s of this.inbound.keys()) s.destroy();
    this.server?.close();
  }

  /**
   * Asks the member at `address` one question on a connection of its own (a joining member's members
   * query, a follower's lease query): resolves with its answer, undefined when there is none within
   * `timeoutMs` of `clock` (no member there, a refused query, garbage, a paused process).
   */
  static ask(address: PeerAddress, clock: Clock, timeoutMs: number, query: MembersQuery | LeaseQuery, t?: PeerTls): Promise<Frame | undefined> {
    return new Promise((resolve) => {
      const { host, port } = address;
      const socket = dialPeer(address, t);
      const reader = new FrameReader();
      let done = false;
      const finish = (a: Frame | undefined): void => {
        if (done) return;
        done = true;
        clock.cancel(timer);
        socket.destroy();
        resolve(a);
      };
      const timer = clock.setTimer(clock.now() + timeoutMs, () => finish(undefined), 'peer.ask');
      socket.once(t === undefined ? 'connect' : 'secureConnect', () => socket.write(encodeFrame(query)));
      socket.on('data', (chunk: Buffer) => {
        try {
          for (const body of reader.push(chunk)) finish(decodeFrame(body));
        } catch {
          finish(undefined);
        }
      });
      socket.on('error', () => finish(undefined));
      socket.on('close', () => finish(undefined));
    });
  }

  private dial(p: Outbound): void {
    if (this.closed || this.peers.get(p.id) !== p) return;
    p.redial = undefined;
    const t = this.opts.tls;
    const socket = dialPeer(p.address, t);
    p.socket = socket;
    socket.setNoDelay(true);
    socket.once(t === undefined ? 'connect' : 'secureConnect', () => {
      if (p.socket !== socket) return;
      socket.write(encodeFrame({ kind: 'hello', from: this.opts.id, to: p.id, clusterId: this.opts.clusterId }));
      p.connected = true;
      for (const f of p.queue) socket.write(f);
      p.queue = [];
      this.opts.peerActive?.(p.id, true);
    });
    // The member dialed answers nothing on our stream but "removed" (etcd's 410 Gone), then closes it.
    const reader = new FrameReader();
    socket.on('data', (chunk: Buffer) => {
      try {
        for (const body of reader.push(chunk)) if (decodeFrame(body).kind === 'removed' && p.socket === socket) this.opts.removedFromCluster?.();
      } catch {
        // garbage from a peer: the stream is dropped below
      }
      socket.destroy();
    });
    socket.on('error', () => socket.destroy());
    socket.once('close', () => {
      if (p.socket !== socket) return;
      if (p.connected) this.opts.peerActive?.(p.id, false);
      p.socket = undefined;
      p.connected = false;
      p.queue = [];
      if (!this.closed && this.peers.get(p.id) === p) p.redial = this.opts.clock.setTimer(this.opts.clock.now() + REDIAL_MS, () => this.dial(p), 'peer.redial');
    });
  }

  /**
   * A peer whose stream to us just opened is listening: a stream of ours to it that failed (it was not up
   * yet, as at a cluster's start) is dialed now rather than after the rest of its pause.
   */
  private redialNow(id: NodeId): void {
    const p = this.peers.get(id);
    if (p === undefined || p.redial === undefined) return;
    this.opts.clock.cancel(p.redial);
    this.dial(p);
  }

  /** A MsgSnap and its db on a connection of their own; while one is in flight to the peer, another is dropped. */
  private sendSnapshot(p: Outbound, m: Message): void {
    if (p.snapshot !== undefined) return;
    const db = this.opts.snapshotDb?.(m);
    if (db === undefined) return;
    const socket = dialPeer(p.address, this.opts.tls);
    p.snapshot = socket;
    streamSnapshot(socket, this.opts.tls === undefined ? 'connect' : 'secureConnect', { clusterId: this.opts.clusterId, msg: m }, db, () => {
      if (p.snapshot === socket) p.snapshot = undefined;
    });
  }

  private accept(s: net.Socket): void {
    if (this.closed) {
      s.destroy();
      return;
    }
    this.inbound.set(s, undefined);
    const reader = new FrameReader();
    let from: NodeId | undefined;
    const refuse = (reason: string): void => {
      this.opts.refused?.(reason);
      s.destroy();
    };
    let receiver: SnapshotReceiver | undefined;
    const onData = (chunk: Uint8Array): void => {
      if (receiver !== undefined) {
        if (!receiver.take(chunk)) s.destroy();
        return;
      }
      // Until the first frame is read, read only it: a snapshot's db follows its frame as raw bytes.
      for (const body of reader.push(chunk, from === undefined ? 1 : Infinity)) {
        const f = decodeFrame(body);
        if (from === undefined) {
          if (f.kind === 'members?' && this.opts.members !== undefined) {
            s.end(encodeFrame(this.opts.members()));
            return;
          }
          if (f.kind === 'lease?' && this.opts.lease !== undefined) {
            s.pause(); // one question per connection: nothing more is read
            void this.opts.lease(f).then(
              (a) => {
                if (!s.destroyed) s.end(encodeFrame(a));
              },
              () => s.destroy(),
            );
            return;
          }
          if (f.kind !== 'hello' && f.kind !== 'snap') return refuse('a peer stream must open with a hello');
          if (f.clusterId !== this.opts.clusterId) return refuse(`request cluster ID mismatch (got ${f.clusterId.toString(16)} want ${this.opts.clusterId.toString(16)})`);
          const to = f.kind === 'hello' ? f.to : f.msg.to;
          if (to !== this.opts.id) return refuse(`stream for member ${to.toString(16)}, this is ${this.opts.id.toString(16)}`);
          if (f.kind === 'snap') {
            if (this.opts.snapDir === undefined) return refuse('snapshots are not received here');
            receiver = new SnapshotReceiver(this.opts.snapDir, f.msg, f.size, (m) => this.opts.deliver(m));
            const rest = reader.takeRest();
            if (rest.length > 0) onData(rest);
            return;
          }
          if (this.opts.isRemoved?.(f.from) === true) {
            this.opts.refused?.(`rejected the stream from peer ${f.from.toString(16)} since it was removed`);
            s.end(encodeFrame({ kind: 'removed' }));
            return;
          }
          from = f.from;
          this.inbound.set(s, from);
          this.redialNow(from);
          const rest = reader.takeRest();
          if (rest.length > 0) onData(rest);
          return;
        }
        if (f.kind !== 'msg' || f.msg.from !== from || f.msg.to !== this.opts.id) return refuse('a message not from the stream\'s peer or not for this member');
        this.opts.deliver(f.msg);
        if (s.destroyed) return;
      }
    };
    s.on('data', (chunk: Buffer) => {
      try {
        onData(chunk);
      } catch (err) {
        if (err instanceof PeerFrameError) return refuse(err.message);
        throw err;
      }
    });
    s.once('close', () => receiver?.abort());
    s.on('error', () => s.destroy());
    s.once('close', () => this.inbound.delete(s));
  }
}

/** A connection to a peer's port, on TLS when the member's peer URLs ask (a peer's certificate checked against the CA given). */
function dialPeer(address: PeerAddress, t: PeerTls | undefined): net.Socket {
  const { host, port } = address;
  return t === undefined ? net.connect({ host, port }) : tls.connect({ host, port, cert: t.cert, key: t.key, ...(t.ca === undefined ? { rejectUnauthorized: false } : { ca: t.ca, checkServerIdentity: () => undefined }) });
}
