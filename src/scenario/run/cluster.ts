/**
 * A scenario on a simulated cluster (`members N`): the run's engine and its etcdctl's view of the members.
 *
 * Every request goes through the members' ClusterMemberServices — proposals, ReadIndex, forwarding to the
 * leader, exactly as for any other client of the cluster — over one client link named `etcdctl`, with
 * etcdctl's command timeout (5 s) as the call's deadline. Those services answer with promises; a script runs
 * synchronously (the playground calls it in the browser), so after a call the run moves the virtual clock
 * itself, instant by instant, until the cluster has answered (EtcdCluster.answerOf) — what happens meanwhile
 * (watch events, elections) prints in between, as in a terminal while etcdctl waits.
 *
 * Also here: the fault levers as directives (`pause`, `partition`, `lag`, `crash`, `move-leader`, ...; see
 * parse/cluster_directives.ts), Raft's own events noted as they happen (a new leader, a leader stepping
 * down, a snapshot sent to a follower), the cluster expectations (`expect leader`, `expect member`) and
 * `etcdctl endpoint status`.
 */
import { clusterOf, type EtcdClusterSim, isSafeRetry, retryBackoffMs, retryPolicyOf, UNARY_MAX_ATTEMPTS } from '../../client/index.js';
import type { LessorEvent } from '../../lease/index.js';
import type { CommitListener } from '../../mvcc/index.js';
import { isGrpcError, type EtcdServer, type GrpcError } from '../../server/index.js';
import type * as M from '../../server/messages.js';
import { clusterErrors, type ClusterMemberServices, type EtcdCluster, type MemberState } from '../../cluster/index.js';
import type { SimRandom, VirtualClock } from '../../sim/index.js';
import { showTime } from '../format.js';
import { procfileClientPort, type ClusterDirective } from '../parse/cluster_directives.js';
import type { CompareOp, Expectation } from '../parse/expectations.js';
import { RunError } from '../run_error.js';
import type { TimelineMemberEventKind } from '../timeline/index.js';
import { humanBytes, statusTable } from './endpoint_status.js';
import { ETCDCTL_COMMAND_TIMEOUT_MS } from './leases.js';
import type { RunState, ScenarioEngine, ScenarioServices, ScenarioSim } from './state.js';

/** The client link name of the script's etcdctl (the link levers `drop-link` / `delay-link` act on it). */
export const ETCDCTL_CLIENT = 'etcdctl';

/** No command waits longer than this for an answer, whatever the cluster does (a guard, never reached: the deadline comes first). */
const WAIT_GUARD_MS = 10 * 60_000;

/**
 * etcdctl's endpoints: one (`--endpoints=mN`, or the default 127.0.0.1:2379). Its clientv3 therefore waits
 * before every retry (roundRobinQuorumBackoff with a quorum of one endpoint).
 */
const ETCDCTL_ENDPOINTS = 1;

/** The Raft events the transcript notes as they happen (the cluster's trace has them; proposals are left out). */
const RAFT_EVENT = /^leader |steps down|^snapshot /;

/** A cluster run's engine and etcdctl's view of the members; `cluster` (clusterOf): the EtcdCluster behind cs.cluster. */
export class ScenarioCluster implements ScenarioEngine {
  /** The member commands go to (`use`): etcdctl's default endpoint 127.0.0.1:2379 is infra1. */
  private current = 0;
  /** The member of the running command's `--endpoints`, if it has one. */
  private override: number | undefined;
  private readonly views: ScenarioServices[];
  private readonly seenRevisions = new Set<number>();
  private readonly seenRevokes = new Set<string>();
  private traceSeen = 0;
  private state: RunState | undefined;
  /** Each member's store revision as its commits report it (a snapshot's restore does not): where a restore starts from. */
  private readonly revisions = new Map<number, number>();
  /** etcdctl's clientv3's random stream (the jitter of its retry waits): its own fork of the cluster's seed. */
  private readonly retryRandom: SimRandom;
  /** The member commands go to, as a script's steps see a member (run/state.ts). */
  readonly sim: ScenarioSim;

  constructor(readonly cs: EtcdClusterSim<VirtualClock>, private readonly cluster: EtcdCluster = clusterOf(cs)) {
    this.retryRandom = this.cluster.random.fork('etcdctl/retry');
    this.views = this.cluster.members.map((m) => this.syncServices(m.index));
    const self = this;
    const singleOnly = (what: string): never => {
      throw new RunError('error', `${what} acts on the single member; on a cluster use install-snapshot MEMBER`);
    };
    this.sim = {
      clock: cs.clock,
      get server(): EtcdServer {
        return self.member.server;
      },
      get mvcc() {
        return self.member.server.mvcc;
      },
      get lessor() {
        return self.member.server.lessor;
      },
      get watchable() {
        return self.member.server.watchable;
      },
      get services(): ScenarioServices {
        return self.views[self.index]!;
      },
      snapshot: () => singleOnly('snapshot'),
      restore: () => singleOnly('restore'),
    };
    this.traceSeen = this.cluster.trace().length;
    this.cluster.onServer((server, m) => {
      this.revisions.set(m.index, server.mvcc.currentRevision);
      server.mvcc.subscribe((rev) => this.revisions.set(m.index, rev));
    });
  }

  /** Connects the run's state (for the transcript: what happens while etcdctl waits). */
  attach(s: RunState): void {
    this.state = s;
    // The timeline's member rows, and who leads when the run starts (elected before the first step).
    const c = this.cluster;
    s.timeline.members.push(...c.members.map((m) => m.name));
    const l = c.leader;
    if (l !== undefined) this.record(s, 'leader', l.name, `${l.name} is the leader (term ${l.term}) when the run starts`, { term: Number(l.term) });
  }

  /** A member event for the timeline's time strip, at this instant. */
  private record(s: RunState, kind: TimelineMemberEventKind, member: string | undefined, text: string, extra: { term?: number; ms?: number; side?: readonly string[] } = {}, atMs = this.cs.clock.now()): void {
    s.timeline.memberEvents.push({ kind, member, atMs, atRev: s.sim.mvcc.currentRevision, line: s.line, text, ...extra });
  }

  private get index(): number {
    return this.override ?? this.current;
  }

  /** The member the running command goes to. */
  get member(): MemberState {
    return this.cluster.members[this.index]!;
  }

  // ---------------------------------------------------------------------------------------------------
  // ScenarioEngine

  advance(ms: number): void {
    this.waitUntil(() => false, ms);
  }

  flush(): void {
    this.cluster.flush();
    this.noteRaftEvents();
  }

  onWrite(fn: CommitListener): void {
    // Every member applies the same revisions: each is recorded once, when the first member applies it.
    this.cluster.onServer((server) =>
      server.mvcc.subscribe((rev, events) => {
        if (this.seenRevisions.has(rev)) return;
        this.seenRevisions.add(rev);
        fn(rev, events);
      }),
    );
  }

  onLeaseRevoked(fn: (ev: Extract<LessorEvent, { type: 'revoke' }>) => void): void {
    this.cluster.onServer((server) =>
      server.lessor.subscribe((ev) => {
        if (ev.type !== 'revoke') return;
        const key = `${ev.id}@${ev.revision}`;
        if (this.seenRevokes.has(key)) return;
        this.seenRevokes.add(key);
        fn(ev);
      }),
    );
  }

  waitUntil(done: () => boolean, ms: number): boolean {
    const clock = this.cs.clock;
    const end = clock.now() + ms;
    while (!done()) {
      const due = clock.nextDue();
      if (due === undefined || due > end) {
        if (Number.isFinite(end) && end > clock.now()) this.cluster.advanceSync(end - clock.now());
        this.noteRaftEvents();
        return done();
      }
      // One instant: every timer due then runs (Raft ticks, applies, watch sync, lease expiry), then delivery.
      this.cluster.advanceSync(Math.max(0, due - clock.now()));
      this.noteRaftEvents();
    }
    return true;
  }

  endpointFlag(): string {
    // etcdctl's default endpoint, 127.0.0.1:2379, is infra1's: no flag needed there.
    return this.index === 0 ? '' : `--endpoints=127.0.0.1:${procfileClientPort(this.index)} `;
  }

  currentEndpoint(): number | undefined {
    return this.index;
  }

  withEndpoint<T>(i: number | undefined, fn: () => T): T {
    const before = this.override;
    this.override = i;
    try {
      return fn();
    } finally {
      this.override = before;
    }
  }

  // ---------------------------------------------------------------------------------------------------
  // Waiting for a member's answer

  /**
   * The answer of a call made through the cluster's services: at once if it has one, else after moving time
   * until it has. etcdctl's deadline (the connection's) ends the wait at the latest; a member that is down
   * leaves etcdctl retrying the connection until then, and it prints `context deadline exceeded`.
   */
  private answer<T>(call: Promise<T>, start = this.cs.clock.now()): T {
    const c = this.cluster;
    // The answer is read through answerOf; the promise itself is never awaited, so it must not count as unhandled.
    call.then(undefined, () => undefined);
    let a = c.answerOf(call);
    if (a === undefined) {
      this.state?.beginWait();
      this.waitUntil(() => (a = c.answerOf(call)) !== undefined, WAIT_GUARD_MS);
      a = c.answerOf(call);
      if (a === undefined) throw new RunError('error', `no answer after ${showTime(WAIT_GUARD_MS)} of virtual time`);
    }
    if (a.ok) return a.value;
    if (a.error.details.startsWith('connection error')) {
      // grpc-go keeps dialing a refused endpoint; etcdctl gives up at its command timeout (observed on 3.4.23).
      this.state?.beginWait();
      this.waitUntil(() => false, Math.max(0, start + ETCDCTL_COMMAND_TIMEOUT_MS - this.cs.clock.now()));
      throw clusterErrors.errDeadlineExceeded();
    }
    throw a.error;
  }

  /**
   * One unary call of etcdctl to member `member`, as its clientv3 3.4 interceptor makes it
   * (client/retry_policy.ts, the rule the failover client follows too): sent again on the same endpoint
   * while retry.go's table allows it for `service.method` — a repeatable call (Range, LeaseGrant/Revoke/
   * TimeToLive, Status, MemberList, ...) after an Unavailable answer (`etcdserver: leader changed`, a timed-out
   * ReadIndex); every other call (Put, Txn, DeleteRange, Compact, Authenticate) never — after the jittered
   * 25 ms wait, on a connection whose deadline is what is left of the command's, until that runs out.
   */
  private call<T>(member: number, service: string, method: string, issue: (v: ClusterMemberServices) => Promise<T>): T {
    const policy = retryPolicyOf(service, method);
    const clock = this.cs.clock;
    const start = clock.now();
    const endAt = start + ETCDCTL_COMMAND_TIMEOUT_MS;
    let last: GrpcError | undefined;
    for (let attempt = 0; attempt < UNARY_MAX_ATTEMPTS; attempt++) {
      const wait = retryBackoffMs(attempt, ETCDCTL_ENDPOINTS, this.retryRandom);
      if (wait > 0) {
        this.state?.beginWait();
        // waitRetryBackoff: the command's deadline, if it comes first, ends the call.
        const left = endAt - clock.now();
        if (left <= wait) {
          this.waitUntil(() => false, Math.max(0, left));
          throw clusterErrors.errDeadlineExceeded();
        }
        this.waitUntil(() => false, wait);
      }
      try {
        return this.answer(issue(this.cluster.connect(member, { client: ETCDCTL_CLIENT, deadlineMs: endAt - clock.now() })), start);
      } catch (err) {
        if (!isGrpcError(err)) throw err;
        last = err;
        if (!isSafeRetry(policy, err)) throw err;
      }
    }
    throw last!;
  }

  /** Member `i`'s services answering synchronously (see answer and call), over etcdctl's link, with its deadline. */
  private syncServices(i: number): ScenarioServices {
    const v = this.cluster.connect(i, { client: ETCDCTL_CLIENT, deadlineMs: ETCDCTL_COMMAND_TIMEOUT_MS });
    const down = (): void => {
      if (v.member.crashed) throw new RunError('error', `${v.member.name} is down (crash): etcdctl would keep dialing it; restart it first (restart ${v.member.name})`);
    };
    return {
      kv: {
        put: (req, ctx) => this.call(i, 'kv', 'put', (r) => r.kv.put(req, ctx)),
        range: (req, ctx) => this.call(i, 'kv', 'range', (r) => r.kv.range(req, ctx)),
        deleteRange: (req, ctx) => this.call(i, 'kv', 'deleteRange', (r) => r.kv.deleteRange(req, ctx)),
        txn: (req, ctx) => this.call(i, 'kv', 'txn', (r) => r.kv.txn(req, ctx)),
        compact: (req, ctx) => this.call(i, 'kv', 'compact', (r) => r.kv.compact(req, ctx)),
      },
      lease: {
        leaseGrant: (req, ctx) => this.call(i, 'lease', 'leaseGrant', (r) => r.lease.leaseGrant(req, ctx)),
        leaseRevoke: (req, ctx) => this.call(i, 'lease', 'leaseRevoke', (r) => r.lease.leaseRevoke(req, ctx)),
        leaseTimeToLive: (req, ctx) => this.call(i, 'lease', 'leaseTimeToLive', (r) => r.lease.leaseTimeToLive(req, ctx)),
        leaseKeepAlive: (ctx) => {
          down();
          return v.lease.leaseKeepAlive(ctx);
        },
      },
      auth: { authenticate: (req, ctx) => this.call(i, 'auth', 'authenticate', (r) => r.auth.authenticate(req, ctx)) },
      watch: {
        watch: (ctx) => {
          down();
          return v.watch(ctx);
        },
      },
    };
  }

  // ---------------------------------------------------------------------------------------------------
  // Transcript

  /** Notes Raft's events since the last look (a new leader, a step-down, a snapshot sent), each at its instant. */
  private noteRaftEvents(): void {
    const s = this.state;
    const trace = this.cluster.trace();
    for (; this.traceSeen < trace.length; this.traceSeen++) {
      const ev = trace[this.traceSeen]!;
      if (s === undefined || !RAFT_EVENT.test(ev.event)) continue;
      s.timeMark();
      const m = /^leader (\S+) term (\d+)$/.exec(ev.event);
      const said = `# [raft] ${m !== null ? `${m[1]} is the leader now (term ${m[2]})` : ev.event}`;
      s.out(said);
      const down = /^(\S+) steps down/.exec(ev.event);
      const sent = /^snapshot (\S+) -> (\S+) at \d+$/.exec(ev.event);
      const text = said.replace(/^# \[raft\] /, '');
      if (m !== null) {
        this.record(s, 'leader', m[1], text, { term: Number(m[2]) }, ev.at);
        this.notePromotions(s, m[1]!, Number(m[2]), ev.at);
      }
      else if (down !== null) this.record(s, 'step-down', down[1], text, {}, ev.at);
      else if (sent !== null) this.record(s, 'snapshot', sent[2], text, {}, ev.at);
      // A snapshot installed on a follower is drawn as the single member's `restore` is: its store jumps.
      const snap = /^snapshot (\S+) -> (\S+) at \d+$/.exec(ev.event);
      const to = snap === null ? undefined : this.cluster.members.find((x) => x.name === snap[2]);
      if (to !== undefined) {
        const toRev = to.server.mvcc.currentRevision;
        s.timeline.restores.push({ name: `${snap![1]}'s snapshot on ${to.name}`, fromRev: this.revisions.get(to.index) ?? toRev, toRev, line: s.line, atMs: ev.at, kind: 'snapshot-install', member: to.name });
        this.revisions.set(to.index, toRev);
      }
    }
  }

  /**
   * A new leader's lessor starts every lease over (etcd's Promote): the timeline's lease rows take the expiry
   * that lessor now holds, so the deadline they draw is the cluster's, not the TTL counted from the grant.
   */
  private notePromotions(s: RunState, leader: string, term: number, at: number): void {
    const lessor = this.cluster.members.find((x) => x.name === leader)?.server.lessor;
    if (lessor === undefined) return;
    for (const l of s.timeline.leases) {
      if (l.end !== undefined) continue;
      const expiry = lessor.expiryOf(BigInt(`0x${l.id}`));
      if (expiry === undefined || !Number.isFinite(expiry)) continue;
      (l.promotions ??= []).push({ atMs: at, expiresAtMs: expiry, leader, term, line: s.line });
    }
  }

  /** Who leads, as one phrase. */
  private leaderPhrase(): string {
    const l = this.cluster.leader;
    return l === undefined ? 'no leader' : `leader ${l.name} (term ${l.term})`;
  }

  // ---------------------------------------------------------------------------------------------------
  // Directives

  /** Runs a cluster directive, noting it in the transcript. */
  run(s: RunState, d: ClusterDirective): void {
    const c = this.cluster;
    const name = (i: number): string => c.members[i]!.name;
    this.noteRaftEvents();
    // The lever goes on the timeline with what the transcript says about it, at the moment it was pulled.
    const at = this.cs.clock.now();
    const leaderBefore = c.leader?.name;
    const said = s.transcript.length;
    this.directive(s, d, name);
    const text = (s.transcript[said] ?? '').replace(/^# /, '');
    const member = 'member' in d && d.member !== undefined ? name(d.member) : d.kind === 'elect' || d.kind === 'compact-log' ? leaderBefore : undefined;
    if (d.kind === 'partition') {
      for (const g of d.groups) for (const i of g) this.record(s, 'partition', name(i), text, { side: g.map(name) }, at);
    } else if (d.kind !== 'use') {
      const ms = d.kind === 'lag' || d.kind === 'delay-link' ? { ms: d.ms } : {};
      this.record(s, d.kind, member, text, ms, at);
    }
    this.flush();
  }

  /** The directive itself, noted in the transcript. */
  private directive(s: RunState, d: ClusterDirective, name: (i: number) => string): void {
    const c = this.cluster;
    switch (d.kind) {
      case 'use':
        this.current = d.member;
        s.out(`# use ${name(d.member)}: etcdctl's commands go to ${name(d.member)} (--endpoints=127.0.0.1:${procfileClientPort(d.member)}) from now on`);
        break;
      case 'pause': {
        const m = c.members[d.member]!;
        const state = m.crashed ? 'it is down (crash)' : m.paused ? 'it is stopped already' : undefined;
        c.pause(d.member);
        s.out(`# pause ${m.name} (SIGSTOP): ${state ?? 'it sends, receives and applies nothing; calls to it wait until it resumes'}`);
        break;
      }
      case 'resume': {
        const m = c.members[d.member]!;
        const was = m.paused;
        c.resume(d.member);
        s.out(`# resume ${m.name} (SIGCONT): ${was ? 'it goes on where it stopped' : 'it was not stopped'}`);
        break;
      }
      case 'isolate':
        c.isolate(d.member);
        s.out(`# isolate ${name(d.member)}: the network cuts it off from the other members (clients still reach it)`);
        break;
      case 'partition':
        c.partition(d.groups);
        s.out(`# partition ${d.groups.map((g) => g.map(name).join(' ')).join(' | ')}: members reach only those on their side`);
        break;
      case 'heal':
        c.heal();
        s.out('# heal: every member reaches every other again');
        break;
      case 'lag':
        c.setApplyLag(d.member, d.ms);
        s.out(`# lag ${name(d.member)} ${d.raw}: ${name(d.member)} applies each committed entry ${d.raw} after the leader committed it (a slow disk or CPU)`);
        break;
      case 'crash':
        if (c.members[d.member]!.crashed) {
          s.out(`# crash ${name(d.member)}: it is down already`);
          break;
        }
        c.crash(d.member);
        s.out(`# crash ${name(d.member)} (SIGKILL): its calls and streams break; its backend and raft log survive; ${this.leaderPhrase()}`);
        break;
      case 'restart': {
        const m = c.members[d.member]!;
        // The crashed server's store is what its backend holds: the revision the rebuilt member starts from.
        const from = m.crashed ? m.server.mvcc.currentRevision : undefined;
        c.restart(d.member);
        s.out(
          from === undefined
            ? `# restart ${m.name}: it is running (restart acts on a crashed member)`
            : `# restart ${m.name}: rebuilt from its backend (revision ${from}, applied index ${c.status(m).raftAppliedIndex}); it rejoins as a follower and catches up from the leader at its next heartbeat`,
        );
        break;
      }
      case 'move-leader': {
        const from = c.leader;
        const ok = c.moveLeader(d.member);
        s.out(
          from?.index === d.member
            ? `# move-leader ${name(d.member)}: it leads already (term ${from.term})`
            : ok
            ? `# move-leader ${name(d.member)}: leadership transferred${from !== undefined ? ` from ${from.name}` : ''}; ${this.leaderPhrase()}`
            : `# move-leader ${name(d.member)}: the transfer did not happen (no leader reaching it, or it is down); ${this.leaderPhrase()}`,
        );
        break;
      }
      case 'elect':
        c.forceElection(d.member);
        s.out(`# elect${d.member === undefined ? '' : ` ${name(d.member)}`}: the leader steps down and ${d.member === undefined ? 'a member' : name(d.member)} campaigns at once; ${this.leaderPhrase()}`);
        break;
      case 'compact-log': {
        const offset = c.compactLog(d.keep);
        s.out(`# compact-log: the leader's raft log now starts after index ${offset}; a follower behind that can only catch up through a snapshot`);
        break;
      }
      case 'install-snapshot': {
        const m = c.members[d.member]!;
        const before = m.server.mvcc.currentRevision;
        const l = c.leader;
        const traced = c.trace().length;
        c.installSnapshot(d.member);
        const [after, installed] = [m.server.mvcc.currentRevision, c.trace().slice(traced).some((e) => e.event.startsWith('snapshot ') && e.event.includes(` -> ${m.name} `))];
        s.out(
          l === undefined || l === m
            ? `# install-snapshot ${name(d.member)}: nothing sent (${l === m ? `${m.name} is the leader` : 'no leader'})`
            : installed
              ? `# install-snapshot ${name(d.member)}: ${l.name} sends its snapshot; ${m.name} applies it (revision ${before} → ${after}); its watchers move to unsynced`
              : `# install-snapshot ${name(d.member)}: ${l.name} sends its snapshot; ${m.name} keeps its state (revision ${after}): it already committed up to the snapshot, and Raft installs one only past that`,
        );
        break;
      }
      case 'drop-link':
        c.dropLink(ETCDCTL_CLIENT, d.member);
        s.out(`# drop-link ${name(d.member)}: the network between etcdctl and ${name(d.member)} drops everything`);
        break;
      case 'delay-link':
        c.delayLink(ETCDCTL_CLIENT, d.member, d.ms);
        s.out(`# delay-link ${name(d.member)} ${d.raw}: each message between etcdctl and ${name(d.member)} takes ${d.raw}`);
        break;
      case 'restore-link':
        c.restoreLink(ETCDCTL_CLIENT, d.member);
        s.out(`# restore-link ${name(d.member)}: the network between etcdctl and ${name(d.member)} is back to normal`);
        break;
    }
  }

  // ---------------------------------------------------------------------------------------------------
  // Expectations and endpoint status

  /** The leader's server (where LeaseTimeToLive is answered), or the current member's without one. */
  leaseServer(): EtcdServer {
    return (this.cluster.leader ?? this.member).server;
  }

  /**
   * Checks a cluster expectation; undefined when it holds, else what was found. `int` expands the
   * expectation's number.
   */
  check(e: Extract<Expectation, { kind: 'leader' | 'member' | 'member-role' }>, int: (w: Extract<Expectation, { kind: 'member' }>['value']) => number): string | undefined {
    const c = this.cluster;
    switch (e.kind) {
      case 'leader': {
        const l = c.leader;
        if ((l?.index ?? -1) === (e.member ?? -1)) return undefined;
        return l === undefined ? 'no leader' : `leader ${l.name} (term ${l.term})`;
      }
      case 'member-role': {
        const m = c.members[e.member]!;
        const role = m.crashed ? 'down (crashed)' : m.role;
        return role === e.role ? undefined : role;
      }
      case 'member': {
        const m = c.members[e.member]!;
        const st = c.status(e.member);
        const got = e.what === 'revision' ? m.server.mvcc.currentRevision : e.what === 'applied-index' ? st.raftAppliedIndex : e.what === 'raft-index' ? st.raftIndex : Number(st.term);
        return compare(e.op, got, int(e.value)) ? undefined : `${e.what} ${got}`;
      }
    }
  }

  /**
   * `etcdctl endpoint status`: one Maintenance.Status per endpoint — the current member, or with `--cluster`
   * every client URL of MemberList's members (asked of the current member first, as etcdctl's
   * endpointsFromCluster does; in member ID order); a member that does not answer within the command timeout
   * is left out with etcdctl's message, and the command then fails. Both calls are retried as clientv3
   * retries them (repeatable).
   */
  endpointStatus(s: RunState, table: boolean, all: boolean): void {
    const c = this.cluster;
    const cmd = `$ etcdctl ${this.endpointFlag()}endpoint status${all ? ' --cluster' : ''}${table ? ' -w table' : ''}`;
    let targets: { endpoint: string; member: number }[];
    if (all) {
      try {
        const list = this.call(this.index, 'cluster', 'memberList', (v) => v.cluster.memberList({}));
        targets = list.members.flatMap((mb) => {
          const m = c.members.find((x) => String(x.id) === String(mb.ID));
          return m === undefined ? [] : mb.clientURLs.map((endpoint) => ({ endpoint, member: m.index }));
        });
      } catch (err) {
        if (!isGrpcError(err)) throw err;
        // etcdctl exits before asking any member for its status.
        const said = `failed to fetch endpoints from etcd cluster member list: ${err.details}`;
        s.last = { revision: undefined, error: said, output: [`Error: ${said}`], range: undefined, what: 'endpoint status' };
        s.command(cmd, s.last.output);
        return;
      }
    } else {
      targets = [{ endpoint: `127.0.0.1:${procfileClientPort(this.index)}`, member: this.index }];
    }
    const rows: string[][] = [];
    const failed: string[] = [];
    let firstError: string | undefined;
    for (const t of targets) {
      try {
        const r: M.StatusResponse = this.call(t.member, 'maintenance', 'status', (v) => v.maintenance.status({}));
        rows.push([
          t.endpoint,
          BigInt(r.header.member_id).toString(16),
          r.version,
          humanBytes(Number(r.dbSize)),
          String(r.leader === r.header.member_id),
          String(r.isLearner === true),
          String(r.raftTerm),
          String(r.raftIndex),
          String(r.raftAppliedIndex),
          (r.errors ?? []).join(', '),
        ]);
      } catch (err) {
        if (!isGrpcError(err)) throw err;
        firstError ??= err.details;
        failed.push(`Failed to get the status of endpoint ${t.endpoint} (${err.details})`);
      }
    }
    const lines = table ? statusTable(rows) : rows.map((r) => `${r.join(', ')}`);
    s.last = { revision: undefined, error: firstError, output: [...lines, ...failed], range: undefined, what: 'endpoint status' };
    s.command(cmd, s.last.output);
  }
}

function compare(op: CompareOp, a: number, b: number): boolean {
  return op === '==' ? a === b : op === '!=' ? a !== b : op === '<' ? a < b : op === '<=' ? a <= b : op === '>' ? a > b : a >= b;
}
