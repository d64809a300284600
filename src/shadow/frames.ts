/**
 * gRPC's length-prefixed messages (a flag byte, a 4-byte big-endian length, the message), read off the
 * bytes a shadowed call carries in one direction. The proxy passes the bytes on untouched; this reader
 * only taps them, so the simulator sees the same messages the real etcd does.
 *
 * Memory stays bounded per stream: a message longer than `maxMessageBytes` (etcd refuses those anyway,
 * with its receive limit) or a compressed one stops the tap for that direction, and the call is counted
 * as not compared instead of being buffered whole.
 */
import { Buffer } from 'node:buffer';

export class MessageTap {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Why this direction is no longer read (undefined while it is). */
  stopped: string | undefined;

  constructor(
    private readonly onMessage: (message: Buffer) => void,
    private readonly maxMessageBytes: number,
  ) {}

  push(chunk: Buffer): void {
    if (this.stopped !== undefined) return;
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    while (this.stopped === undefined && this.pendingBytes >= 5) {
      const head = this.peek(5);
      const flag = head[0]!;
      const len = head.readUInt32BE(1);
      if (flag !== 0) {
        this.stop(`a message with flag ${flag} (compressed)`);
        return;
      }
      if (len > this.maxMessageBytes) {
        this.stop(`a message over ${this.maxMessageBytes} bytes`);
        return;
      }
      if (this.pendingBytes < 5 + len) return;
      const all = this.take(5 + len);
      this.onMessage(all.subarray(5));
    }
  }

  private stop(why: string): void {
    this.stopped = why;
    this.pending = [];
    this.pendingBytes = 0;
  }

  private peek(n: number): Buffer {
    if (this.pending[0]!.length >= n) return this.pending[0]!.subarray(0, n);
    const joined = Buffer.concat(this.pending);
    this.pending = [joined];
    return joined.subarray(0, n);
  }

  private take(n: number): Buffer {
    const joined = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
    const out = joined.subarray(0, n);
    const rest = joined.subarray(n);
    this.pending = rest.length > 0 ? [rest] : [];
    this.pendingBytes = rest.length;
    return out;
  }
}
