/**
 * What a process member's snapshot is made of, as etcd's is: the db (member/snap/db, etcd's backend file,
 * its consistent index the snapshot's) and the Raft snapshot's data, which names the cluster's members
 * (etcd keeps them in its v2 store, the data of its Raft snapshots). Here: writing the db when the member
 * snapshots, opening it for a leader's MsgSnap, putting a received one in its place (etcd's
 * openSnapshotBackend), and the members' encoding.
 */
import { existsSync, fstatSync, openSync, renameSync } from 'node:fs';
import type { EtcdBackend } from '../snapshot/index.js';
import { encodeEtcdBackend, writeBolt } from '../snapshot/index.js';
import { syncDir, writeBackendFile, type DataDirLayout } from '../storage/index.js';
import type { ProcessClusterMember } from './process_member.js';
import { receivedDbPath, type SnapshotDb } from './snapshot_stream.js';

/** A snapshot's data: the members as etcd's v2 store names them, and whether the cluster version was set. */
export interface MembersData {
  readonly members: readonly ProcessClusterMember[];
  /** The leader set the cluster version already (etcd's /0/version). */
  readonly clusterVersionSet: boolean;
}

export function encodeMembers(d: MembersData): Uint8Array {
  const members = d.members.map((m) => ({ id: m.id.toString(16), name: m.name, peerURLs: m.peerUrls, clientURLs: m.clientUrls, isLearner: m.isLearner }));
  return new TextEncoder().encode(JSON.stringify({ members, clusterVersionSet: d.clusterVersionSet }));
}

/** A snapshot's members; undefined for a snapshot without data (a new member's empty one). */
export function decodeMembers(data: Uint8Array): MembersData | undefined {
  if (data.length === 0) return undefined;
  const d = JSON.parse(new TextDecoder().decode(data)) as { members: { id: string; name: string; peerURLs: string[]; clientURLs: string[]; isLearner: boolean }[]; clusterVersionSet: boolean };
  return {
    members: d.members.map((m) => ({ id: BigInt(`0x${m.id}`), name: m.name, peerUrls: m.peerURLs, clientUrls: m.clientURLs, isLearner: m.isLearner })),
    clusterVersionSet: d.clusterVersionSet,
  };
}

/**
 * The member's state written as its db at `index` (before the snap file names that snapshot); the leases'
 * checkpointed remaining TTLs only with `persistCheckpoints` (etcd persists them from 3.6, or with 3.4.23's
 * and 3.5's --experimental-enable-lease-checkpoint-persist).
 */
export function writeMemberDb(layout: DataDirLayout, backend: EtcdBackend, index: number, persistCheckpoints: boolean): void {
  const leases = persistCheckpoints ? backend.leases : backend.leases.map((l) => ({ ...l, remainingTTL: 0 }));
  writeBackendFile(layout, writeBolt(encodeEtcdBackend({ ...backend, leases, consistentIndex: BigInt(index) })));
}

/** The db to stream with a MsgSnap: the member's member/snap/db, open, or undefined when it has none. */
export function openMemberDb(layout: DataDirLayout): SnapshotDb | undefined {
  if (!existsSync(layout.backendPath)) return undefined;
  const fd = openSync(layout.backendPath, 'r');
  return { fd, size: fstatSync(fd).size };
}

/** The db that came with the leader's MsgSnap at `index` becomes the member's, synced. */
export function takeReceivedDb(layout: DataDirLayout, index: number): void {
  const received = receivedDbPath(layout.snapDir, index);
  if (!existsSync(received)) throw new Error(`etcdsim: snapshot at ${index} installed without its db (${received})`);
  renameSync(received, layout.backendPath);
  syncDir(layout.snapDir);
}
