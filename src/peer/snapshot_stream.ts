/**
 * A leader's snapshot on its way to a member far behind (etcd's rafthttp snapshotSender and its
 * /raft/snapshot handler): the MsgSnap goes on a connection of its own, so the member's message stream
 * is not held up behind a database; a `snap` frame names the message, the cluster and the db's size,
 * then the db (the leader's member/snap/db, whose consistent index is the snapshot's) follows as raw
 * bytes. Both ends stream: the sender pipes the open file into the socket (at most a read buffer in
 * memory, Node's backpressure holding the rest on disk), the receiver writes each chunk to
 * `member/snap/<index>.snap.db` (etcd's name for a received db) as it arrives, syncs it, and only then
 * delivers the MsgSnap — a connection that breaks or brings more or fewer bytes than announced delivers
 * nothing and leaves no file. Raft sends the snapshot again when no answer comes (src/raft: after an
 * election timeout).
 */
import { closeSync, createReadStream, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type * as net from 'node:net';
import type { Message } from '../raft/index.js';
import { encodeFrame, type SnapHeader } from './codec.js';

/** The db an incoming snapshot at `index` is written to (etcd's `%016x.snap.db`). */
export function receivedDbPath(snapDir: string, index: number): string {
  return join(snapDir, `${index.toString(16).padStart(16, '0')}.snap.db`);
}

/** Receivers of this process so far: each writes its own temporary file (a leader may send one snapshot twice). */
let receivers = 0;

/** The db to stream after a MsgSnap: an open file (closed once sent or failed) and its size. */
export interface SnapshotDb {
  readonly fd: number;
  readonly size: number;
}

/**
 * Streams `msg` and `db` over `socket` once it is connected (`connectEvent`), ending it after the last
 * byte; `done` is told once the socket closes, whatever happened.
 */
export function streamSnapshot(socket: net.Socket, connectEvent: 'connect' | 'secureConnect', header: Omit<SnapHeader, 'kind' | 'size'>, db: SnapshotDb, done: () => void): void {
  const file = createReadStream('', { fd: db.fd, autoClose: true, highWaterMark: 64 * 1024 });
  let closed = false;
  const finish = (): void => {
    if (closed) return;
    closed = true;
    file.destroy();
    socket.destroy();
    done();
  };
  socket.once(connectEvent, () => {
    socket.write(encodeFrame({ kind: 'snap', clusterId: header.clusterId, msg: header.msg, size: db.size }));
    file.pipe(socket);
  });
  // The receiver answers nothing: whatever it sends is a broken peer.
  socket.on('data', () => finish());
  socket.on('error', () => finish());
  file.on('error', () => finish());
  socket.once('close', () => finish());
}

/**
 * The receiving end: takes the db's bytes as they come and, once `size` of them are on disk and synced,
 * hands the MsgSnap over. `take` returns false when the peer sent more than it announced (drop it).
 */
export class SnapshotReceiver {
  private readonly tmp: string;
  private readonly path: string;
  private fd: number | undefined;
  private got = 0;

  constructor(
    snapDir: string,
    private readonly msg: Message,
    private readonly size: number,
    private readonly deliver: (m: Message) => void,
  ) {
    this.path = receivedDbPath(snapDir, msg.snapshot!.index);
    this.tmp = `${this.path}.${++receivers}.tmp`;
    this.fd = openSync(this.tmp, 'w', 0o600);
    if (size === 0) this.complete();
  }

  take(chunk: Uint8Array): boolean {
    if (this.fd === undefined || this.got + chunk.length > this.size) {
      this.abort();
      return false;
    }
    let done = 0;
    while (done < chunk.length) done += writeSync(this.fd, chunk, done, chunk.length - done);
    this.got += chunk.length;
    if (this.got === this.size) this.complete();
    return true;
  }

  /** The connection closed: a db not complete is thrown away. */
  abort(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
    rmSync(this.tmp, { force: true });
  }

  private complete(): void {
    const fd = this.fd!;
    fsyncSync(fd);
    closeSync(fd);
    this.fd = undefined;
    renameSync(this.tmp, this.path);
    this.deliver(this.msg);
  }
}
