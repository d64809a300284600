/**
 * A shadow started in front of an etcd that already holds data: the simulator starts from that etcd's own
 * state, taken with Maintenance.Snapshot (etcd's bbolt file, streamed) and restored as a member restores
 * one (src/snapshot reads etcd's backend: keys with their whole retained history, the compaction point,
 * leases, users and roles, alarms). The snapshot is one consistent read of etcd's backend at a revision; the
 * shadow's own watch then follows every revision after it, so comparisons hold from the first request.
 * With auth on, etcd lets only a user with the root role take it: the shadow's own (--user, own_auth.ts).
 *
 * Bounded: the simulator holds every retained revision in memory (the snapshot file while it is restored, then
 * the store made from it), so a db larger than `maxBytes` is refused as soon as etcd's first response says how
 * large it is (its remaining_bytes), with what to do about it, instead of filling the shadow's memory.
 */
import { Buffer } from 'node:buffer';
import * as grpc from '@grpc/grpc-js';
import { etcdService } from '../grpc/index.js';
import type * as M from '../server/messages.js';
import { hostNow } from '../sim/index.js';

/**
 * etcd's refusal of the seeding Snapshot for want of auth, as what to do about it (undefined: another
 * error). etcd 3.4.23 checks a Snapshot's token as it checks an admin's ("auth: user name is empty"
 * without one, "auth: permission denied" for a user without the root role).
 */
export function seedRefusal(details: string, user: string | undefined): string | undefined {
  if (/^(auth|etcdserver): user name is empty$/.test(details)) {
    return "the etcd's auth is enabled and the shadow has no user: give it one with --user NAME:PASSWORD (a user with the root role: etcd's Snapshot, which seeds the simulator, needs it)";
  }
  if (/^(auth|etcdserver): permission denied$/.test(details)) {
    return `the user ${user ?? '(none)'} may not take etcd's snapshot, which seeds the simulator: --user must name a user with the root role`;
  }
  return undefined;
}

/** The largest etcd db the shadow takes on by default (etcd's default space quota is 2 GiB). */
export const DEFAULT_MAX_SEED_BYTES = 512 * 1024 * 1024;

/** The refusal of a db over the bound. */
export function seedTooLarge(size: number, maxBytes: number): Error {
  return new Error(
    `the etcd's db is ${size} bytes, over the ${maxBytes} bytes the shadow's simulator takes on (it holds the etcd's state in memory): compact and defragment the etcd, or raise --max-seed-bytes`,
  );
}

/**
 * etcd's snapshot as one file (`address`: host:port, `creds`: the upstream's credentials), at most
 * `maxBytes`; `token`: the shadow's own (own_auth.ts), which etcd requires of a Snapshot with auth on.
 */
export function snapshotOf(address: string, creds: grpc.ChannelCredentials = grpc.credentials.createInsecure(), maxBytes = DEFAULT_MAX_SEED_BYTES, token?: string, deadlineMs = 60_000): Promise<Buffer> {
  const client = new (etcdService('Maintenance'))(address, creds);
  const md = new grpc.Metadata();
  if (token !== undefined) md.set('token', token);
  return new Promise<Buffer>((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let refused = false;
    const snapshot = (client as unknown as { snapshot(req: M.SnapshotRequest, md: grpc.Metadata, opts: grpc.CallOptions): grpc.ClientReadableStream<M.SnapshotResponse> }).snapshot;
    const stream = snapshot.call(client, {}, md, { deadline: hostNow() + deadlineMs });
    stream.on('data', (r: M.SnapshotResponse) => {
      if (refused) return;
      size += r.blob.length;
      // The whole db's size: what came so far and what etcd says remains.
      const whole = size + Number(r.remaining_bytes ?? 0);
      if (whole > maxBytes) {
        refused = true;
        parts.length = 0;
        stream.cancel();
        client.close();
        reject(seedTooLarge(whole, maxBytes));
        return;
      }
      parts.push(Buffer.from(r.blob));
    });
    stream.on('error', (err) => {
      client.close();
      if (!refused) reject(err);
    });
    stream.on('end', () => {
      client.close();
      resolve(Buffer.concat(parts));
    });
  });
}
