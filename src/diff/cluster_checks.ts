/**
 * What etcd promises of a cluster, judged on one side's run (cluster_drive.ts recorded it):
 *  - lease: a key attached to a lease kept alive is never deleted while keep-alives succeed (every gap
 *    between successful renewals shorter than the TTL), and once renewals stop it is gone within TTL +
 *    election timeout + the lessor's period + slack, never before TTL;
 *  - members: after settling, every member answers, all name one leader, 3 members;
 *  - keyspace: every member holds the same keys, values and revisions;
 *  - watch: each stream passes the watch-guarantee checker against the committed history, which replays
 *    to the members' keyspace;
 *  - linearizable: the KV history is linearizable; revision: with every write's outcome known, the final
 *    revision is 1 + the writes that changed something;
 *  - raft: the side's own Raft invariants held after every tick (the simulator's checker).
 * The lease check reads the lease key until it is gone, so it still drives the side's time.
 */
import type * as M from '../server/messages.js';
import { checkWatch, formatViolations, type CommittedHistory, type HistoryRevision } from '../watch/index.js';
import { checkLinearizable, type KvOperation } from './linearizability.js';
import { CALL_DEADLINE_MS, ELECTION_MS, EXPIRY_SLACK_MS, LEASE_KEY, LESSOR_CHECK_MS } from './cluster_plan.js';
import { ALL, bytes, text, type ClusterRun } from './cluster_drive.js';

/** One check's outcome on one side. */
export interface ClusterCheck {
  readonly name: 'linearizable' | 'watch' | 'lease' | 'keyspace' | 'revision' | 'members' | 'raft';
  /** 'skipped': the check's premise did not hold this run (said in detail), so it promises nothing. */
  readonly status: 'ok' | 'failed' | 'skipped';
  readonly detail: string;
}

/** The lease check: present while renewed, gone in time once renewals stop. Stops the renewals. */
export async function checkLease(run: ClusterRun): Promise<ClusterCheck> {
  const { side, t0, renewals } = run;
  const ttl = run.plan.leaseTtlS;
  // The lease is still kept alive: its key must be there (a linearizable read).
  const present = await run.anyMember((m) => m.kv.range({ key: bytes(LEASE_KEY) }), 'Range of the lease key');
  const presentAt = side.now();
  run.renewing = false;
  await side.sleep(CALL_DEADLINE_MS); // the last renewal answers or gives up
  const ok = renewals.filter((r) => r.ret !== undefined);
  let longestGap = 0;
  for (let k = 1; k < ok.length; k++) longestGap = Math.max(longestGap, ok[k]!.invoke - ok[k - 1]!.invoke);
  longestGap = Math.max(longestGap, presentAt - (ok.filter((r) => r.invoke <= presentAt).at(-1)?.invoke ?? 0));
  const last = ok.at(-1)!;
  // A later renewal that got no answer in time may still have renewed the lease (its answer lost, or
  // served once a resumed member ran again): the upper bound counts from its deadline too.
  const lastSent = renewals.at(-1)!;
  const anchor = Math.max(last.ret!, lastSent.ret ?? lastSent.invoke + CALL_DEADLINE_MS);
  const leaseChecks: string[] = [];
  let leaseFailed = false;
  if (longestGap < ttl * 1000) {
    if (present.kvs.length === 0) {
      leaseFailed = true;
      leaseChecks.push(`the lease key was gone at +${presentAt - t0}ms although every renewal gap was under the TTL (longest ${longestGap} ms)`);
    }
  } else {
    leaseChecks.push(`renewals paused ${longestGap} ms >= TTL: presence not promised`);
  }
  // Then it must go within TTL + election timeout + the lessor's period + slack after the last renewal,
  // and not before TTL after the last successful one was sent.
  const bound = ttl * 1000 + ELECTION_MS + LESSOR_CHECK_MS + EXPIRY_SLACK_MS;
  let goneAt: number | undefined;
  while (side.now() <= anchor + bound + 500) {
    const r = await run.anyMember((m) => m.kv.range({ key: bytes(LEASE_KEY) }), 'Range of the lease key');
    if (r.kvs.length === 0) {
      goneAt = side.now();
      break;
    }
    await side.sleep(100);
  }
  if (present.kvs.length > 0 || longestGap < ttl * 1000) {
    if (goneAt === undefined) {
      leaseFailed = true;
      leaseChecks.push(`the lease key outlived its last renewal (+${anchor - t0}ms) by more than ${bound} ms`);
    } else if (goneAt - last.invoke < ttl * 1000 && present.kvs.length > 0) {
      leaseFailed = true;
      leaseChecks.push(`the lease key was gone ${goneAt - last.invoke} ms after the last renewal was sent, before its TTL`);
    } else {
      leaseChecks.push(`gone ${goneAt - anchor} ms after the last renewal (bound ${bound})`);
    }
  }
  return { name: 'lease', status: leaseFailed ? 'failed' : 'ok', detail: `${ok.length}/${renewals.length} renewals; ${leaseChecks.join('; ')}` };
}

/** The members check: `members` listed, and the settled statuses' leaders. */
export function checkMembers(n: number, members: number, statuses: readonly M.StatusResponse[]): { check: ClusterCheck; leaders: number } {
  const leaderIds = new Set(statuses.map((s) => s.leader));
  const leaders = statuses.filter((s) => s.leader !== '0' && s.leader === s.header.member_id).length;
  const check: ClusterCheck = {
    name: 'members',
    status: members === n && leaders === 1 && leaderIds.size === 1 ? 'ok' : 'failed',
    detail: `${members} members, ${leaders} reports itself leader, leaders named: ${[...leaderIds].join(', ')}`,
  };
  return { check, leaders };
}

/** The keyspace check over every member's serializable range of all keys (undefined: no answer). */
export function checkKeyspace(spaces: ReadonlyArray<M.RangeResponse | undefined>): { check: ClusterCheck; agree: boolean } {
  const render = (r: M.RangeResponse | undefined): string =>
    r === undefined ? '(no answer)' : r.kvs.map((kv) => `${text(kv.key)}=${text(kv.value)}@${kv.create_revision}/${kv.mod_revision}/v${kv.version}`).join(' ');
  const shown = spaces.map(render);
  const agree = shown.every((s) => s === shown[0]) && spaces[0] !== undefined;
  const check: ClusterCheck = { name: 'keyspace', status: agree ? 'ok' : 'failed', detail: agree ? `${spaces[0]!.kvs.length} keys on every member` : shown.map((s, i) => `member ${i}: ${s}`).join('\n') };
  return { check, agree };
}

/** The watch check: every stream against the committed history, and the history against the keyspace. */
export function checkWatches(run: ClusterRun, reference: HistoryRevision[] | undefined, finalRevision: number | undefined, keyspace: ReadonlyMap<string, string>, agree: boolean): ClusterCheck {
  const watches = run.watches;
  const watchProblems: string[] = [];
  if (reference === undefined) {
    watchProblems.push('the committed history could not be read back');
  } else {
    const committed: CommittedHistory = { revisions: reference, completeFrom: 2, baseline: [] };
    for (const w of watches) {
      const v = checkWatch(committed, w.request, w.responses, { drainedThrough: w.ended ? undefined : finalRevision });
      if (v.length > 0) watchProblems.push(`watch on member ${w.member} from revision ${w.request.startRevision}${w.ended ? ' (broken by a kill)' : ''}:\n    ${formatViolations(v).split('\n').join('\n    ')}`);
    }
    // The history replays to the keyspace every member holds.
    const replayed = new Map<string, string>();
    for (const rev of reference) for (const ev of rev.events) ev.type === 'PUT' ? replayed.set(text(ev.kv.key), text(ev.kv.value)) : replayed.delete(text(ev.kv.key));
    const a = [...replayed].sort().join(' ');
    const b = [...keyspace].sort().join(' ');
    if (agree && a !== b) watchProblems.push(`the committed history replays to {${a}}, the members hold {${b}}`);
  }
  return { name: 'watch', status: watchProblems.length === 0 ? 'ok' : 'failed', detail: watchProblems.length === 0 ? `${watches.length} streams` : watchProblems.join('\n') };
}

/** Linearizability of the KV history. */
export function checkHistory(ops: readonly KvOperation[]): ClusterCheck {
  const lin = checkLinearizable(ops);
  return {
    name: 'linearizable',
    status: lin.verdict === 'linearizable' ? 'ok' : lin.verdict === 'gave-up' ? 'skipped' : 'failed',
    detail: lin.verdict === 'linearizable' ? `${lin.operations} operations on ${lin.keys} keys` : lin.verdict === 'gave-up' ? `gave up on key ${lin.key} after ${lin.steps} steps` : lin.text,
  };
}

/** The revision count: with every write's outcome known, each write that changed something is one revision. */
export function checkRevision(ops: readonly KvOperation[], unknownWrites: number, finalRevision: number | undefined, reference: HistoryRevision[] | undefined): ClusterCheck {
  if (unknownWrites > 0 || finalRevision === undefined || reference === undefined) {
    return { name: 'revision', status: 'skipped', detail: `${unknownWrites} writes with an unknown outcome` };
  }
  const changed = ops.filter(changedSomething).length;
  // + the revisions of the lease key (its put — twice if a retried setup put had applied — and its
  // deletion by expiry), as the committed history has them.
  const leased = reference.filter((rev) => rev.events.some((ev) => text(ev.kv.key) === LEASE_KEY)).length;
  const expected = 1 + changed + leased;
  return { name: 'revision', status: expected === finalRevision ? 'ok' : 'failed', detail: `final revision ${finalRevision}, expected ${expected} (1 + ${changed} KV writes + ${leased} of the lease key)` };
}

/** Raft's own invariants, where the side checks them after every tick (the simulator); undefined elsewhere. */
export function checkRaft(run: ClusterRun): ClusterCheck | undefined {
  const broken = run.side.raftViolations?.();
  if (broken === undefined) return undefined;
  return { name: 'raft', status: broken.length === 0 ? 'ok' : 'failed', detail: broken.length === 0 ? 'invariants held after every tick' : broken.join('\n') };
}

/** A write answered that changed the keyspace: a put, a successful txn, a delete that deleted. */
function changedSomething(o: KvOperation): boolean {
  if (o.ret === 'unknown') return false;
  return o.type === 'put' || (o.type === 'cas' && o.succeeded === true) || (o.type === 'delete' && o.deleted === 1);
}

/** Every member's keyspace, serializable (its own applied state, caught up after settling). */
export function readKeyspaces(run: ClusterRun): Promise<Array<M.RangeResponse | undefined>> {
  return Promise.all(Array.from({ length: run.n }, (_, i) => run.drive(run.timeout(run.side.member(i).kv.range({ ...ALL, serializable: true }), 3000))));
}
