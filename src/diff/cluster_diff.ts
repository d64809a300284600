/**
 * The cluster differential (issue 18, item 5): one seeded client workload and one seeded fault schedule,
 * run against the simulated cluster (src/cluster, virtual time, deterministic) — or, with `processes`,
 * etcdsim as the etcd binary in three processes (issue 31) — and against a real 3-member etcd
 * (etcd_cluster.ts, real time), each checked for what etcd promises of a cluster:
 *
 *  - KV: the history of concurrent clients spread over the members (puts, linearizable gets, deletes,
 *    compare-and-swap txns) is linearizable (linearizability.ts);
 *  - watches: one watch per member (re-opened after a restart, from the revision after its last event),
 *    each stream judged by the watch-guarantee checker (src/watch/guarantees.ts: ordered, unique, no gaps
 *    within the revisions it vouched for, ...) against the committed history read back at the end;
 *  - leases: a key attached to a lease kept alive is never deleted while keep-alives succeed (every gap
 *    between successful renewals shorter than the TTL), and once the renewals stop it is gone within
 *    TTL + election slack, never before TTL;
 *  - exact agreement where etcd is deterministic: after the workload settles and every member caught up,
 *    every member holds the same keys and values (and revisions); when no write had an unknown outcome
 *    the final revision is 1 + the number of writes that changed something; the committed history replays
 *    to the final keyspace; 3 members, one leader all members name.
 *
 * The faults are those expressible on both sides: pause / resume a member (SIGSTOP / SIGCONT), kill /
 * restart it (SIGKILL, then etcd on the same data dir), MoveLeader. A fault names a role ("the leader", "a
 * follower"), resolved when it fires, because which member leads is decided by each side's elections.
 *
 * Time: a side is driven by one loop (`Side.sleep`): on the simulator that moves the virtual clock, so the
 * same seed gives the same run; on etcd it waits real time. Timeouts inside the workload use the side's
 * timers (`Side.after`), never the host's directly.
 */
import { checkHistory, checkKeyspace, checkLease, checkMembers, checkRaft, checkRevision, checkWatches, readKeyspaces, type ClusterCheck } from './cluster_checks.js';
import { ClusterRun, text } from './cluster_drive.js';
import { clusterPlan, type ClusterPlan } from './cluster_plan.js';
import { etcdSide, etcdsimProcessSide, simSide, type ClusterSide, type SimSideOptions } from './cluster_side.js';

export { clusterPlan, type ClusterFault, type ClusterPlan } from './cluster_plan.js';
export { etcdSide, etcdsimProcessSide, simSide, type ClusterSide, type SimSideOptions } from './cluster_side.js';
export type { ClusterCheck } from './cluster_checks.js';

// ---------------------------------------------------------------------------------------------------
// The run: plan, drive, check

/** What one side did and how it fared. */
export interface ClusterSideResult {
  readonly side: ClusterSide['name'];
  readonly seed: number;
  readonly checks: readonly ClusterCheck[];
  /** The faults as they fired (member resolved), or why one was skipped. */
  readonly faultLog: readonly string[];
  readonly operations: number;
  readonly unknownWrites: number;
  readonly finalRevision: number | undefined;
  /** The settled keyspace (identical on every member when 'keyspace' passed): key -> value. */
  readonly keyspace: ReadonlyMap<string, string>;
  readonly members: number;
  readonly leaders: number;
  readonly watchStreams: number;
}

/** Both sides of one seed and what differs between them. */
export interface ClusterDiffResult {
  readonly seed: number;
  readonly plan: ClusterPlan;
  readonly sides: readonly ClusterSideResult[];
  /** Failed checks (with their side) and cross-side disagreements where etcd is deterministic. */
  readonly divergences: readonly string[];
  /** The command that replays this seed. */
  readonly replay: string;
}

/** Runs the plan on one side and checks it. The side is closed afterwards. */
export async function runClusterSide(side: ClusterSide, plan: ClusterPlan): Promise<ClusterSideResult> {
  try {
    return await runOn(side, plan);
  } finally {
    await side.close();
  }
}

/** Drives the plan on `side` (cluster_drive.ts), then judges what it recorded (cluster_checks.ts). */
async function runOn(side: ClusterSide, plan: ClusterPlan): Promise<ClusterSideResult> {
  const run = new ClusterRun(side, plan);
  // Watches first, one per member, from revision 2 (the first a write makes): every event of the run is
  // theirs to report.
  for (let i = 0; i < run.n; i++) run.openWatch(i, 2);
  await run.startLease();
  await run.runWorkload();

  const checks: ClusterCheck[] = [await checkLease(run)];
  // Settle: every member answers, names the same leader, and applied what the leader committed.
  const statuses = await run.settle();
  const listed = (await run.anyMember((m) => m.memberList(), 'MemberList')).members.length;
  const { check: membersCheck, leaders } = checkMembers(run.n, listed, statuses);
  checks.push(membersCheck);
  const spaces = await readKeyspaces(run);
  const { check: keyspaceCheck, agree } = checkKeyspace(spaces);
  checks.push(keyspaceCheck);
  const finalRevision = spaces[0] === undefined ? undefined : Number(spaces[0].header.revision);
  const keyspace = new Map((spaces[0]?.kvs ?? []).map((kv) => [text(kv.key), text(kv.value)] as const));

  // The committed history: a watch from revision 2 on the leader, read through the final revision.
  const reference = finalRevision === undefined ? undefined : await run.readHistory(statuses, finalRevision);
  // Let every live watch catch up to the final revision, then judge each stream.
  if (finalRevision !== undefined) {
    for (let k = 0; k < 100 && run.watches.some((w) => !w.ended && w.lastRevision < finalRevision); k++) await side.sleep(50);
  }
  checks.push(checkWatches(run, reference, finalRevision, keyspace, agree));
  for (const w of run.watches) w.stream.cancel();

  const ops = run.history.operations;
  checks.push(checkHistory(ops));
  const unknownWrites = ops.filter((o) => o.ret === 'unknown' && o.type !== 'get').length;
  checks.push(checkRevision(ops, unknownWrites, finalRevision, reference));
  const raft = checkRaft(run);
  if (raft !== undefined) checks.push(raft);
  return { side: side.name, seed: plan.seed, checks, faultLog: run.faultLog, operations: ops.length, unknownWrites, finalRevision, keyspace, members: listed, leaders, watchStreams: run.watches.length };
}

// ---------------------------------------------------------------------------------------------------
// Both sides, compared

export interface ClusterDiffOptions {
  /** Workload length in ms (default 6000). */
  readonly durationMs?: number | undefined;
  /** Inject the seed's faults (default true); without them the revision count is checked exactly. */
  readonly faults?: boolean | undefined;
  /** Run the simulated side only (no etcd needed). */
  readonly simOnly?: boolean | undefined;
  /**
   * The simulated side as etcdsim's own processes (etcdsim as the etcd binary, faults by signals) instead
   * of the in-process cluster on virtual time; `sim` does not apply to it, and a failure is not shrunk.
   */
  readonly processes?: boolean | undefined;
  readonly sim?: SimSideOptions | undefined;
  readonly etcdBin?: string | undefined;
  /**
   * Keep only these of the seed's planned faults (indices into clusterPlan's list): what the fault
   * shrinker (shrinkClusterFaults) found still fails, replayed with `--keep-faults`.
   */
  readonly keepFaults?: readonly number[] | undefined;
}

/** The command that replays one seed of the cluster differential. */
export function clusterReplayCommand(seed: number, opts: ClusterDiffOptions = {}): string {
  const flags = [
    opts.durationMs === undefined ? '' : ` --duration ${opts.durationMs}`,
    opts.faults === false ? ' --no-faults' : '',
    opts.keepFaults === undefined ? '' : ` --keep-faults ${opts.keepFaults.length === 0 ? 'none' : opts.keepFaults.join(',')}`,
    opts.processes === true ? ' --processes' : '',
    opts.simOnly === true ? ' --sim-only' : '',
  ];
  return `etcdsim diff --cluster --seed ${seed}${flags.join('')}`;
}

/**
 * Runs one seed on the simulated cluster and (unless simOnly) on a real one, and lists the divergences:
 * every failed check, with its side, and every cross-side disagreement where etcd is deterministic
 * (member count, one leader).
 */
export async function runClusterDiff(seed: number, opts: ClusterDiffOptions = {}): Promise<ClusterDiffResult> {
  const planned = clusterPlan(seed, opts.durationMs, opts.faults ?? true);
  const keep = opts.keepFaults;
  const plan = keep === undefined ? planned : { ...planned, faults: planned.faults.filter((_, i) => keep.includes(i)) };
  const sides: ClusterSideResult[] = [await runClusterSide(opts.processes === true ? await etcdsimProcessSide(plan) : simSide(plan, opts.sim), plan)];
  if (opts.simOnly !== true) sides.push(await runClusterSide(await etcdSide(plan, { bin: opts.etcdBin }), plan));
  const divergences: string[] = [];
  for (const s of sides) for (const c of s.checks) if (c.status === 'failed') divergences.push(`${s.side}: ${c.name}: ${c.detail}`);
  if (sides.length === 2) {
    const [a, b] = [sides[0]!, sides[1]!];
    if (a.members !== b.members) divergences.push(`members: ${a.side} ${a.members}, ${b.side} ${b.members}`);
    if (a.leaders !== b.leaders) divergences.push(`leaders: ${a.side} ${a.leaders}, ${b.side} ${b.leaders}`);
  }
  return { seed, plan, sides, divergences, replay: clusterReplayCommand(seed, opts) };
}

/** What shrinkClusterFaults found: the fewest of the seed's planned faults that still fail the same check. */
export interface ShrunkClusterRun {
  /** Indices into the seed's planned faults (clusterPlan) that are kept. */
  readonly keepFaults: readonly number[];
  /** How many faults the seed planned. */
  readonly planned: number;
  /** The simulated run with only those faults (its replay line has `--keep-faults`). */
  readonly result: ClusterDiffResult;
  /** Simulated runs the shrinker made. */
  readonly runs: number;
}

/**
 * Shrinks a seed whose *simulated* side failed a check: the simulated side is a pure function of the seed
 * and its fault schedule, so it is re-run with fewer of the planned faults (first none, then each one left
 * out in turn, greedily, until leaving out any remaining one makes the failure go away) and the smallest
 * schedule that still fails a check of the same name is returned. The workload itself is not shrunk here:
 * the failed check's detail is already minimal where it can be (linearizability.ts prints a sub-history of
 * one key that has no linearization). Undefined when the simulated side did not fail.
 */
export async function shrinkClusterFaults(failed: ClusterDiffResult, opts: ClusterDiffOptions = {}): Promise<ShrunkClusterRun | undefined> {
  const simFailures = (r: ClusterDiffResult): Set<string> =>
    new Set(r.sides.filter((s) => s.side === 'simulator').flatMap((s) => s.checks.filter((c) => c.status === 'failed').map((c) => c.name)));
  const wanted = simFailures(failed);
  if (wanted.size === 0) return undefined;
  const planned = clusterPlan(failed.seed, opts.durationMs, opts.faults ?? true).faults.length;
  let keep = opts.keepFaults === undefined ? Array.from({ length: planned }, (_, i) => i) : [...opts.keepFaults];
  let best: ClusterDiffResult = failed;
  let runs = 0;
  const attempt = async (candidate: number[]): Promise<ClusterDiffResult | undefined> => {
    runs++;
    const r = await runClusterDiff(failed.seed, { ...opts, simOnly: true, keepFaults: candidate });
    return [...simFailures(r)].some((name) => wanted.has(name)) ? r : undefined;
  };
  const none = keep.length === 0 ? undefined : await attempt([]);
  if (none !== undefined) return { keepFaults: [], planned, result: none, runs };
  for (let progress = true; progress && keep.length > 0; ) {
    progress = false;
    for (const i of [...keep]) {
      const candidate = keep.filter((x) => x !== i);
      const r = await attempt(candidate);
      if (r !== undefined) {
        keep = candidate;
        best = r;
        progress = true;
      }
    }
  }
  return { keepFaults: keep, planned, result: best, runs };
}

/** A report of one seed, for humans: each side's checks, its faults, the divergences and the replay line. */
export function formatClusterDiff(r: ClusterDiffResult): string {
  const lines: string[] = [`seed ${r.seed}: ${r.plan.faults.length} faults planned, ${r.plan.clients} clients, ${r.plan.durationMs} ms`];
  for (const s of r.sides) {
    lines.push(`  ${s.side}: ${s.operations} KV operations (${s.unknownWrites} writes with unknown outcome), final revision ${s.finalRevision ?? '?'}, ${s.watchStreams} watch streams`);
    for (const f of s.faultLog) lines.push(`    fault ${f}`);
    for (const c of s.checks) lines.push(`    ${c.status.padEnd(7)} ${c.name}: ${c.detail.split('\n').join('\n      ')}`);
  }
  lines.push(r.divergences.length === 0 ? '  no divergence' : `  ${r.divergences.length} DIVERGENCES:\n    ${r.divergences.join('\n    ')}`);
  lines.push(`  replay: ${r.replay}`);
  return lines.join('\n');
}
