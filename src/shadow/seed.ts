/**
 * A shadow started in front of an etcd that already holds data: the simulator starts from that etcd's own
 * state, taken with Maintenance.Snapshot (etcd's bbolt file, streamed) and restored as a member restores
 * one (src/snapshot reads etcd's backend: keys with their whole retained history, the compaction point,
 * leases, users and roles, alarms). The snapshot is one consistent read of etcd's backend at a revision; the
 * shadow's own watch then follows every revision after it, so comparisons hold from the first request.
 */
import { Buffer } from 'node:buffer';
import * as grpc from '@grpc/grpc-js';
import { etcdService } from '../proto/index.js';
import type * as M from '../server/messages.js';
import { hostNow } from '../sim/index.js';

/** etcd's snapshot as one file (`address`: host:port, `creds`: the upstream's credentials). */
export function snapshotOf(address: string, creds: grpc.ChannelCredentials = grpc.credentials.createInsecure(), deadlineMs = 60_000): Promise<Buffer> {
  const client = new (etcdService('Maintenance'))(address, creds);
  return new Promise<Buffer>((resolve, reject) => {
    const parts: Buffer[] = [];
    const snapshot = (client as unknown as { snapshot(req: M.SnapshotRequest, opts: grpc.CallOptions): grpc.ClientReadableStream<M.SnapshotResponse> }).snapshot;
    const stream = snapshot.call(client, {}, { deadline: hostNow() + deadlineMs });
    stream.on('data', (r: M.SnapshotResponse) => parts.push(Buffer.from(r.blob)));
    stream.on('error', (err) => {
      client.close();
      reject(err);
    });
    stream.on('end', () => {
      client.close();
      resolve(Buffer.concat(parts));
    });
  });
}
