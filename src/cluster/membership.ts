/**
 * etcd's membership changes on the in-process cluster — MemberAdd, MemberRemove, MemberPromote and
 * MemberUpdate as Raft conf changes — with the Cluster service and checks a member in a process of its own
 * has (src/server/member_changes.ts): the member asked checks the request and proposes; the leader, as it
 * makes the entry, makes etcd's apply checks (ValidateConfigurationChange: confChangeRefusal) against the
 * membership it applied, and a refused change becomes an entry every member applies as that refusal — it
 * takes its index, as etcd's does (etcd's apply turns it into a conf change of no member), and Raft's
 * configuration stays. (etcd makes the checks on every member as it applies the entry; the leader's
 * applied membership is the same unless its own apply lags behind a change just committed.) Every member
 * applies a change to its own list of members, and the member asked answers with the members as it then
 * lists them. Like any conf change, one at a time: a second proposed before the first is applied is dropped
 * by the leader (etcd's turns it into an empty entry) and its caller times out.
 *
 * A member MemberAdd added is listed unstarted (no name, no client URLs) until the test starts it (join):
 * it starts from the state a running member applied — what the leader's snapshot brings a new etcd member —
 * catches up from the leader's log, and publishes its name and client URLs through Raft (etcd's publish,
 * retried until it is applied). A removed member stops 1 s after it applied its removal (etcd's
 * stopWithDelay), or once a member that removed it refuses its messages (etcd's rafthttp answers a removed
 * peer so); a restart leaves it down. A learner answers only Status and serializable Range (services.ts).
 */
import type { ConfChange } from '../raft/index.js';
import { applyMemberUpdate, confChangeRefusal, errTransportClosing, membershipChanges, toGrpcError, type CallContext, type GrpcError, type MemberChange, type MembershipHost } from '../server/index.js';
import type { ClusterMemberConfig, EtcdCluster } from './cluster.js';
import { MemberState, installImage, memberImage, storeMembers, type EntryBody, type Reply } from './member_state.js';

/** etcd's stopWithDelay: a member that applied its own removal stops this long after. */
const REMOVED_STOP_DELAY_MS = 1000;

/** A conf change's context: the member as etcd's JSON names it. */
interface MemberContext {
  readonly name: string;
  readonly peerURLs: readonly string[];
  readonly isLearner: boolean;
}

/** The node a member that is down offers the checks (its calls never run: routing refuses them). */
const NO_NODE: MembershipHost['node'] = { role: 'follower', matchOf: () => undefined, log: { committed: 0 } };

/** The Cluster service of member `m`; `send` carries a call to it over the client's link (services.ts). */
export function clusterMembership(c: EtcdCluster, m: MemberState, send: <T>(handle: (reply: Reply<T>) => void, ctx?: CallContext) => Promise<T>) {
  const host: MembershipHost = {
    id: m.id,
    get server() {
      return m.server;
    },
    get members() {
      return m.members;
    },
    // etcd's isLearnerReady reads the leader's Raft progress (a follower asks its leader).
    get node() {
      return (c.reachableLeader(m) ?? m).loop?.node ?? NO_NODE;
    },
    peerActive: (id) => c.raft.network.peerActive(m, id),
    activeSince: (id) => c.raft.network.activeSince(m, id),
    changeMembership: (conf) => new Promise((ok, fail) => c.propose(m, (leader) => confEntry(c, leader, conf), { ok, fail })),
    memberContextOf: (x) => new TextEncoder().encode(JSON.stringify({ name: x.name, peerURLs: x.peerUrls, isLearner: x.isLearner } satisfies MemberContext)),
    validatesOnApply: true,
  };
  // MemberList answers at once (a driver reading answers without awaiting, the scenario runner, sees it in
  // the same instant); a change once this member applied it.
  return membershipChanges(host, (f, ctx) =>
    send((reply) => {
      const r = f();
      if (isPromiseLike(r)) r.then((v) => reply.ok(v), (e: unknown) => reply.fail(e));
      else reply.ok(r);
    }, ctx),
  );
}

/** The entry of a change, as the leader makes it: the change, or its refusal by etcd's apply checks. */
function confEntry(c: EtcdCluster, leader: MemberState, conf: ConfChange): EntryBody {
  const ctx = contextOf(conf.context);
  // etcd's promote is an AddNode of a known member (IsPromote in its context); MemberAdd's carries the member.
  const kind = conf.type === 'add' && ctx === undefined ? 'promote' : conf.type;
  const label = `member${kind[0]!.toUpperCase()}${kind.slice(1)} ${conf.id}`;
  const refused = kind === 'update' ? undefined : confChangeRefusal(leader.members, leader.removedIds, { type: kind, id: conf.id, peerUrls: ctx?.peerURLs });
  if (refused !== undefined) {
    return {
      kind: 'request',
      label,
      apply: (s): never => {
        s.noteRaftEntry();
        throw refused;
      },
    };
  }
  return {
    kind: 'request',
    label,
    conf: { type: conf.type, id: conf.id },
    apply: (s, member): undefined => {
      // A conf change is one Raft entry, also when its apply refuses it (an update's checks are made here).
      s.noteRaftEntry();
      const e = applyChange(c, member, kind, conf.id, ctx);
      if (e !== undefined) throw e;
      storeMembers(member);
      return undefined;
    },
  };
}

/** One member's apply of a change to its list of members (etcd's RaftCluster.AddMember, RemoveMember, ...). */
function applyChange(c: EtcdCluster, member: MemberState, kind: MemberChange['type'] | 'update', id: bigint, ctx: MemberContext | undefined): GrpcError | undefined {
  const ms = member.members;
  if (kind === 'update') return applyMemberUpdate(ms, id, ctx?.peerURLs ?? [], member.server.etcdVersion);
  if (kind === 'remove') {
    ms.delete(id);
    member.removedIds.add(id);
    if (id === member.id) removedFromCluster(c, member, REMOVED_STOP_DELAY_MS);
    return undefined;
  }
  const known = ms.get(id);
  if (kind === 'promote') {
    if (known !== undefined) known.isLearner = false;
  } else if (known === undefined) {
    ms.set(id, { id, name: ctx?.name ?? '', peerUrls: [...(ctx?.peerURLs ?? [])], clientUrls: [], isLearner: kind === 'addLearner' });
  }
  return undefined;
}

function isPromiseLike<T>(v: T | PromiseLike<T>): v is PromiseLike<T> {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
}

function contextOf(bytes: Uint8Array | undefined): MemberContext | undefined {
  if (bytes === undefined || bytes.length === 0) return undefined;
  return JSON.parse(new TextDecoder().decode(bytes)) as MemberContext;
}

/** `m` learned it is no member any more: it stops for good `delayMs` later (a restart leaves it down). */
export function removedFromCluster(c: EtcdCluster, m: MemberState, delayMs: number): void {
  if (m.removed) return;
  m.removed = true;
  c.trace(`${m.name} removed from the cluster`);
  const incarnation = m.incarnation;
  c.clock.setTimer(
    c.clock.now() + delayMs,
    () => {
      if (m.incarnation === incarnation && !m.crashed) c.crash(m);
    },
    'cluster.removed',
  );
}

/**
 * Starts the member MemberAdd added with ID `id` (EtcdCluster.join): from the state the leader (else the
 * running member furthest along) applied, with the peer URLs MemberAdd named; `built` hooks its server
 * into the cluster. It then publishes its name and client URLs through Raft.
 */
export function joinCluster(c: EtcdCluster, id: bigint, config: ClusterMemberConfig, defaults: { readonly name: string; readonly clientUrls: readonly string[] }, built: (m: MemberState) => void): MemberState {
  if (c.states.some((s) => s.id === id)) throw new RangeError(`EtcdCluster.join: member ${id.toString(16)} has started already`);
  const from = c.leader ?? c.states.filter((s) => s.up && !s.removed).sort((a, b) => b.applied - a.applied)[0];
  if (from === undefined) throw new RangeError('EtcdCluster.join: no member is running to join');
  const listed = from.members.get(id);
  if (listed === undefined) throw new RangeError(`EtcdCluster.join: ${from.name} lists no member ${id.toString(16)} (MemberAdd adds one)`);
  if (config.peerUrls !== undefined && config.peerUrls.join() !== listed.peerUrls.join()) {
    throw new RangeError(`EtcdCluster.join: member ${id.toString(16)} was added with peer URLs ${listed.peerUrls.join(',')}`);
  }
  const name = config.name ?? defaults.name;
  const clientUrls = config.clientUrls ?? defaults.clientUrls;
  const options = { ...c.states[0]!.serverOptions, memberId: id, memberName: name, clientUrls, peerUrls: listed.peerUrls, raftTerm: from.term, initialRaftIndex: from.applied };
  const m = new MemberState(c, c.states.length, id, name, clientUrls, listed.peerUrls, options, from.term, from.applied, 0);
  m.server.lessor.demote();
  installImage(m, memberImage(from));
  c.states.push(m);
  built(m);
  c.trace(`join ${name} from ${from.name} at ${from.applied}`);
  c.raft.join(m, from);
  publish(c, m);
  return m;
}

/** etcd's publish: the member's name and client URLs through Raft, until applied (a crash or the cluster's close ends it). */
function publish(c: EtcdCluster, m: MemberState): void {
  const incarnation = m.incarnation;
  const attempt = (): void => {
    if (m.incarnation !== incarnation || m.removed) return;
    const body = (): EntryBody => ({
      kind: 'request',
      label: `publish ${m.name}`,
      apply: (s, member): undefined => {
        s.noteRaftEntry();
        const listed = member.members.get(m.id);
        if (listed !== undefined) {
          listed.name = m.name;
          listed.clientUrls = [...m.clientUrls];
          storeMembers(member);
        }
        return undefined;
      },
    });
    // A timed-out publish is made again, as etcd's loop does; one the member's end or the cluster's close
    // failed ("transport is closing") is not.
    c.propose(m, body, { ok: () => undefined, fail: (err: unknown) => (toGrpcError(err).details === errTransportClosing().details ? undefined : attempt()) });
  };
  attempt();
}
