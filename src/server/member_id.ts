/**
 * How etcd names members and clusters (etcdserver/api/membership: NewMember, genID): a member's ID is the
 * first 8 bytes (big-endian) of the SHA-1 of its sorted peer URLs concatenated, then the cluster token
 * (--initial-cluster-token, "etcd-cluster"), then — for a member added at run time (MemberAdd) — the
 * adding member's clock in Unix seconds, as decimal text. The cluster ID is the first 8 bytes of the
 * SHA-1 of the initial members' IDs, sorted, each as 8 big-endian bytes. So `etcd` with no flags is
 * member 8e9e05c52164694d of cluster cdf818194e3a8c32, and these functions give the same for any flags.
 */
import { createHash } from '../sim/index.js';

/** etcd's default --initial-cluster-token. */
export const DEFAULT_CLUSTER_TOKEN = 'etcd-cluster';

/** A member's ID from its peer URLs (etcd's NewMember); `unixSeconds` only for a member added at run time. */
export function memberIdOf(peerUrls: readonly string[], token: string = DEFAULT_CLUSTER_TOKEN, unixSeconds?: number): bigint {
  let text = [...peerUrls].sort().join('') + token;
  if (unixSeconds !== undefined) text += String(unixSeconds);
  return first8(sha1(new TextEncoder().encode(text)));
}

/** The cluster ID of an initial cluster with these member IDs (etcd's RaftCluster.genID). */
export function clusterIdOf(memberIds: readonly bigint[]): bigint {
  const ids = [...memberIds].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const buf = new Uint8Array(ids.length * 8);
  const view = new DataView(buf.buffer);
  ids.forEach((id, i) => view.setBigUint64(i * 8, id));
  return first8(sha1(buf));
}

function first8(digest: Uint8Array): bigint {
  return new DataView(digest.buffer, digest.byteOffset, 8).getBigUint64(0);
}

function sha1(data: Uint8Array): Uint8Array {
  return createHash('sha1').update(data).digest();
}
