/**
 * The fault levers of a served simulated cluster, reachable from outside the process (etcdsim's own HTTP
 * endpoint, under `/etcdsim/cluster` on every member's client port; etcd has nothing like it — against a
 * real cluster the same faults are signals and iptables). Each lever is EtcdCluster's (src/cluster):
 * one rule, in-process and served.
 *
 *   GET  /etcdsim/cluster                         every member's Raft status (JSON)
 *   POST /etcdsim/cluster/pause?member=M          SIGSTOP          POST .../resume?member=M   SIGCONT
 *   POST /etcdsim/cluster/crash?member=M          SIGKILL          POST .../restart?member=M
 *                                                 (served: the crashed member's port refuses connections,
 *                                                 so restart it through another member's port)
 *   POST /etcdsim/cluster/isolate?member=M        cut off from the other members
 *   POST /etcdsim/cluster/partition?groups=0,1|2  members in different groups do not reach each other
 *   POST /etcdsim/cluster/heal                    ends every partition
 *   POST /etcdsim/cluster/lag?member=M&ms=N       applies N ms after commit (a slow follower)
 *   POST /etcdsim/cluster/move-leader?member=M    leadership transfer       POST .../elect[?member=M]
 *   POST /etcdsim/cluster/drop-link?member=M | delay-link?member=M&ms=N | restore-link?member=M
 *                                                 the network between the served clients and one member
 *   POST /etcdsim/cluster/compact-log[?keep=N]    POST .../install-snapshot?member=M
 *
 * M is a member's index (0-based), name, or ID in hex (as etcdctl prints it). Every lever answers with the
 * status after it; a bad request answers 400 with one line saying why.
 */
import type { EtcdCluster, MemberRef } from '../cluster/index.js';
import { plainError, type HttpRequest, type HttpResponse } from './gateway.js';

/** The path prefix of the control endpoint. */
export const CLUSTER_CONTROL_PATH = '/etcdsim/cluster';

/** The client name served connections use on the cluster's links (dropLink / delayLink act on it). */
export const SERVED_CLIENT = 'client';

/** One member's line in the control endpoint's status. */
export interface ClusterControlMemberStatus {
  readonly index: number;
  readonly name: string;
  /** Member ID in hex, as etcdctl prints it. */
  readonly id: string;
  readonly role: string;
  readonly term: string;
  /** Leader ID in hex ('0': none known). */
  readonly leader: string;
  readonly raftIndex: number;
  readonly raftAppliedIndex: number;
  readonly paused: boolean;
  readonly crashed: boolean;
  readonly applyLagMs: number;
  readonly clientURLs: readonly string[];
}

/** The cluster as the control endpoint reports it. */
export function clusterControlStatus(c: EtcdCluster): { leader: string; term: string; members: ClusterControlMemberStatus[] } {
  return {
    leader: (c.leader?.id ?? 0n).toString(16),
    term: String(c.term),
    members: c.members.map((m, index) => {
      const s = c.status(m);
      return {
        index,
        name: s.name,
        id: s.id.toString(16),
        role: s.role,
        term: String(s.term),
        leader: s.leader.toString(16),
        raftIndex: s.raftIndex,
        raftAppliedIndex: s.raftAppliedIndex,
        paused: s.paused,
        crashed: s.crashed,
        applyLagMs: s.applyLagMs,
        clientURLs: [...m.clientUrls],
      };
    }),
  };
}

class BadControlRequest extends Error {}

/**
 * Handles a request under CLUSTER_CONTROL_PATH; returns false for any other path (the caller answers it).
 * `settled`, when given, resolves once the served ports follow the members (a restarted member's port
 * listens again): a restart is answered after it, so a client may dial the member as soon as it has the answer.
 */
export function handleClusterControl(
  c: EtcdCluster,
  path: string,
  query: URLSearchParams,
  req: HttpRequest,
  res: HttpResponse,
  settled?: () => Promise<void>,
): boolean {
  if (path !== CLUSTER_CONTROL_PATH && !path.startsWith(`${CLUSTER_CONTROL_PATH}/`)) return false;
  const lever = path.slice(CLUSTER_CONTROL_PATH.length + 1);
  if (lever === '') {
    if (req.method !== 'GET') {
      plainError(res, 405, 'Method Not Allowed', { Allow: 'GET' });
      return true;
    }
    return json(res, 200, clusterControlStatus(c));
  }
  if (req.method !== 'POST') {
    plainError(res, 405, 'Method Not Allowed', { Allow: 'POST' });
    return true;
  }
  try {
    const member = (): MemberRef => memberRef(c, query.get('member'));
    const ms = (): number => nonNegative(query.get('ms'), 'ms');
    switch (lever) {
      case 'pause':
        c.pause(member());
        break;
      case 'resume':
        c.resume(member());
        break;
      case 'crash':
        c.crash(member());
        break;
      case 'restart':
        c.restart(member());
        if (settled !== undefined) {
          void settled().then(() => json(res, 200, clusterControlStatus(c)));
          return true;
        }
        break;
      case 'isolate':
        c.isolate(member());
        break;
      case 'partition':
        c.partition(groupsOf(c, query.get('groups')));
        break;
      case 'heal':
        c.heal();
        break;
      case 'lag':
        c.setApplyLag(member(), ms());
        break;
      case 'move-leader':
        if (!c.moveLeader(member())) return json(res, 409, { error: 'leadership transfer failed (no leader, or the target is down or cut off)', ...clusterControlStatus(c) });
        break;
      case 'elect':
        c.forceElection(query.has('member') ? member() : undefined);
        break;
      case 'drop-link':
        c.dropLink(SERVED_CLIENT, member());
        break;
      case 'delay-link':
        c.delayLink(SERVED_CLIENT, member(), ms());
        break;
      case 'restore-link':
        c.restoreLink(SERVED_CLIENT, member());
        break;
      case 'compact-log':
        c.compactLog(query.has('keep') ? nonNegative(query.get('keep'), 'keep') : 0);
        break;
      case 'install-snapshot':
        c.installSnapshot(member());
        break;
      default:
        plainError(res, 404, `no lever ${JSON.stringify(lever)} (see docs/cluster.md, "Served")`);
        return true;
    }
  } catch (err) {
    if (err instanceof BadControlRequest || err instanceof RangeError) {
      plainError(res, 400, err.message);
      return true;
    }
    throw err;
  }
  return json(res, 200, clusterControlStatus(c));
}

function json(res: HttpResponse, status: number, body: unknown): true {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
  return true;
}

/** A member named by index, name or hex ID. */
function memberRef(c: EtcdCluster, v: string | null): MemberRef {
  if (v === null || v === '') throw new BadControlRequest('member=M is required (an index, a name or a hex member ID)');
  if (/^\d+$/.test(v) && Number(v) < c.size) return Number(v);
  const byName = c.members.find((m) => m.name === v);
  if (byName !== undefined) return byName;
  if (/^[0-9a-fA-F]{1,16}$/.test(v)) {
    const id = BigInt(`0x${v}`);
    const byId = c.members.find((m) => m.id === id);
    if (byId !== undefined) return byId;
  }
  throw new BadControlRequest(`no member ${JSON.stringify(v)}`);
}

/** `0,1|2`: groups of members separated by `|`, members by `,`. */
function groupsOf(c: EtcdCluster, v: string | null): MemberRef[][] {
  if (v === null || v === '') throw new BadControlRequest('groups=... is required, e.g. groups=0,1|2');
  return v.split('|').map((g) => (g === '' ? [] : g.split(',').map((m) => memberRef(c, m))));
}

function nonNegative(v: string | null, name: string): number {
  const n = v === null || !/^\d+$/.test(v) ? NaN : Number(v);
  if (!Number.isSafeInteger(n)) throw new BadControlRequest(`${name}=N is required (a non-negative integer)`);
  return n;
}
