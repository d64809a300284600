/**
 * What a scenario run leaves for its picture: every write, watch stream, lease, compaction, restore, read,
 * note and (on a cluster) member event, each with the script line and the moment it happened — the record of
 * etcd's behaviour in the run, from which the page draws. Also what the page reads out of it: the steps (the
 * script's `##` notes), the question and answer, and the events a watch's stream skipped (etcd #19179's lost
 * DELETE: a hole in what it received).
 */
export interface TimelineWrite {
  readonly key: string;
  readonly rev: number;
  readonly type: 'PUT' | 'DELETE';
  readonly value: string;
  /** What made it: the script line, or the lease expiry loop, or a restored snapshot. */
  readonly cause: string;
  /** The script line running when it was written (0: before the first step). */
  readonly line: number;
}

export interface TimelineWatchEvent {
  readonly key: string;
  readonly rev: number;
  readonly type: 'PUT' | 'DELETE';
  /** The index of the watcher's segment (stream) that delivered it. */
  readonly segment?: number | undefined;
  /** The script line running when it arrived. */
  readonly line: number;
  /** Which of the watcher's responses carried it (1-based, each fragment one), and whether that one was a fragment. */
  readonly response?: number | undefined;
  readonly fragment?: boolean | undefined;
}

export interface TimelineWatchSegment {
  /** Requested start revision (0: from now). */
  readonly startRev: number;
  /** Store revision when the watch (or resume) was opened. */
  readonly openedAtRev: number;
  /** Virtual time when it was opened, and the script line that opened it. */
  readonly openedAtMs: number;
  readonly line: number;
  /** How this stream ended, if it did: at which revision and virtual time, during which script line. */
  end: { kind: 'canceled' | 'broken' | 'closed'; atRev: number; compactRevision: number; atMs: number; line: number } | undefined;
}

export interface TimelineWatcher {
  readonly name: string;
  readonly range: string;
  readonly segments: TimelineWatchSegment[];
  readonly events: TimelineWatchEvent[];
  readonly progress: number[];
  /** For each progress notification, how many events the watcher had received when it arrived. */
  readonly progressSeen: number[];
  /** For each progress notification, the script line running when it arrived. */
  readonly progressLines: number[];
  /** The last revision this watcher has seen (its resume cursor is this + 1). */
  cursor: number;
  /** On a cluster, the member that serves it (its `--endpoints`). */
  member?: string | undefined;
}

export interface TimelineLease {
  readonly id: string;
  readonly ttl: number;
  readonly grantedAtRev: number;
  readonly grantedAtMs: number;
  /** The script line of the grant. */
  readonly line: number;
  keepAlives: { atRev: number; atMs: number; line: number }[];
  /** On a cluster: each new leader's lessor started the lease over (etcd's Promote): when, and its expiry from then. */
  promotions?: { atMs: number; expiresAtMs: number; leader: string; term: number; line: number }[];
  end: { kind: 'expired' | 'revoked'; atRev: number; atMs: number; line: number } | undefined;
}

/**
 * What a restore mark stands for: a snapshot restored by the script (`restore S`), the leader's snapshot
 * installed on a follower of a cluster, the single member killed and started again (`restart`), or killed
 * in the middle of a compaction and started again (`crash-during-compact`, etcd #19179's setting).
 */
export type TimelineRestoreKind = 'restore' | 'snapshot-install' | 'restart' | 'crash-during-compact';

/** A jump of a member's store: it restores a snapshot, or rebuilds itself from its backend after a kill. */
export interface TimelineRestore {
  readonly name: string;
  readonly fromRev: number;
  readonly toRev: number;
  readonly line: number;
  readonly atMs: number;
  /** Absent: a `restore` of the script. */
  readonly kind?: TimelineRestoreKind | undefined;
  /** On a cluster, the member whose store it is. */
  readonly member?: string | undefined;
}

/**
 * What happens to the members of a cluster, by virtual time: the fault levers the script pulls (SIGSTOP /
 * SIGCONT, the network cut and healed, a slow disk, SIGKILL and a restart, a leadership transfer, a forced
 * election, a raft log compaction, etcdctl's own link) and what Raft does about them (a leader elected at a
 * term, a leader stepping down, the leader's snapshot sent to a follower).
 */
export type TimelineMemberEventKind =
  | 'leader'
  | 'step-down'
  | 'snapshot'
  | 'pause'
  | 'resume'
  | 'isolate'
  | 'partition'
  | 'heal'
  | 'lag'
  | 'crash'
  | 'restart'
  | 'move-leader'
  | 'elect'
  | 'compact-log'
  | 'install-snapshot'
  | 'drop-link'
  | 'delay-link'
  | 'restore-link';

/** One member event (see TimelineMemberEventKind), with what the transcript said about it. */
export interface TimelineMemberEvent {
  readonly kind: TimelineMemberEventKind;
  /** The member it happens to (undefined: every member, as `heal`). */
  readonly member: string | undefined;
  readonly atMs: number;
  /** The revision of the member etcdctl talks to at that moment. */
  readonly atRev: number;
  readonly line: number;
  readonly text: string;
  /** `leader`: the term it leads. */
  readonly term?: number | undefined;
  /** `lag`: the apply delay from now on; `delay-link`: the added latency (0: none). */
  readonly ms?: number | undefined;
  /** `partition`: the members on this member's side. */
  readonly side?: readonly string[] | undefined;
}

/** A `##` note of the script, met while the run went on: one line of a numbered step on the page. */
export interface TimelineNote {
  readonly line: number;
  readonly text: string;
  /** The store revision when the note was reached (the step's place on the revision axis). */
  readonly rev: number;
  /** Virtual time when it was reached (the step's place on the time strip). */
  readonly atMs?: number | undefined;
}

/** A get: the revision it read at (its --rev, or the header revision) and what it returned. */
export interface TimelineRead {
  readonly line: number;
  readonly rev: number;
  /** Read at a pinned revision (--rev), not the newest. */
  readonly pinned: boolean;
  readonly command: string;
  readonly keys: readonly string[];
  readonly more: boolean;
  /** The error etcd answered instead (ErrCompacted, a future revision): the read is drawn failed. */
  readonly error?: string | undefined;
}

export interface TimelineModel {
  readonly title: string;
  readonly variant: string | undefined;
  readonly settings: readonly string[];
  /** The scenario's description: its `##` lines before the first step (blank `##` lines split paragraphs). */
  readonly description: readonly string[];
  maxRevision: number;
  /** Virtual time at the end of the run (ms). */
  endMs: number;
  readonly writes: TimelineWrite[];
  readonly compactions: { rev: number; line: number; atMs: number }[];
  readonly watchers: TimelineWatcher[];
  readonly leases: TimelineLease[];
  readonly restores: TimelineRestore[];
  /** A cluster's members, by name (empty: the single member). */
  readonly members: string[];
  /** What happened to the members, in the order it happened (see TimelineMemberEvent). */
  readonly memberEvents: TimelineMemberEvent[];
  readonly snapshots: { name: string; rev: number; line: number }[];
  readonly notes: TimelineNote[];
  readonly reads: TimelineRead[];
  /**
   * For each line of this run's transcript, the script line whose step printed it (0: none): the link
   * between a transcript line and the marks that step drew.
   */
  readonly transcriptLines: number[];
  /** Set when the run stopped at a failed expectation or an error. */
  failure: string | undefined;
}

export function emptyTimeline(title: string, variant: string | undefined, settings: readonly string[], description: readonly string[] = []): TimelineModel {
  return { title, variant, settings, description, maxRevision: 1, endMs: 0, writes: [], compactions: [], watchers: [], leases: [], restores: [], members: [], memberEvents: [], snapshots: [], notes: [], reads: [], transcriptLines: [], failure: undefined };
}

/** Distinct keys in byte order (as etcd orders them). */
export function timelineKeys(m: TimelineModel): string[] {
  const keys = new Set<string>();
  for (const w of m.writes) keys.add(w.key);
  return [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

// ---------------------------------------------------------------------------------------------------
// Steps and description: what the page says beside the picture

/** One numbered step of the page: consecutive `##` notes of the script, at the revision they were reached. */
export interface TimelineStep {
  readonly n: number;
  readonly line: number;
  readonly rev: number;
  readonly atMs?: number | undefined;
  readonly text: string;
}

/** A note that starts with this is the answer to the description's `Predict:` question. */
export const ANSWER = /^Answer:\s*/;
/** A description paragraph that starts with this is the question to answer before running. */
export const PREDICT = /^Predict:\s*/;

/** The notes as numbered steps (adjacent note lines are one step), and the answer, if the script gives one. */
export function timelineSteps(m: TimelineModel): { steps: TimelineStep[]; answer: string | undefined } {
  const groups: { line: number; last: number; rev: number; atMs: number | undefined; text: string[] }[] = [];
  for (const n of m.notes) {
    const g = groups[groups.length - 1];
    if (g !== undefined && n.line === g.last + 1) {
      g.text.push(n.text);
      g.last = n.line;
    } else groups.push({ line: n.line, last: n.line, rev: n.rev, atMs: n.atMs, text: [n.text] });
  }
  const steps: TimelineStep[] = [];
  let answer: string | undefined;
  for (const g of groups) {
    const text = g.text.join(' ').replace(/\s+/g, ' ').trim();
    if (ANSWER.test(text)) answer = text.replace(ANSWER, '');
    else steps.push({ n: steps.length + 1, line: g.line, rev: g.rev, atMs: g.atMs, text });
  }
  return { steps, answer };
}

/** The description as paragraphs (a `##` line with no text splits them), the first one being the title line. */
export function descriptionParagraphs(description: readonly string[]): string[] {
  const out: string[] = [];
  let cur: string[] = [];
  for (const l of description) {
    if (l.trim() === '') {
      if (cur.length > 0) out.push(cur.join(' '));
      cur = [];
    } else cur.push(l.trim());
  }
  if (cur.length > 0) out.push(cur.join(' '));
  return out;
}


/**
 * The writes a watch's stream should have delivered and did not: in its range (its key, or under its prefix),
 * at or above the revision the stream started from, below a revision the same stream delivered afterwards —
 * a hole in what it received (etcd #19179's lost DELETE). A run that restores a snapshot of its own can
 * rewrite revisions, so there nothing is flagged.
 */
export function missingEvents(m: TimelineModel, w: TimelineWatcher): { key: string; rev: number; type: 'PUT' | 'DELETE'; line: number; from: number; after: number }[] {
  if (m.restores.some((r) => r.kind === undefined || r.kind === 'restore')) return [];
  const prefix = w.range.endsWith('*');
  const base = prefix ? w.range.slice(0, -1) : w.range;
  const inRange = (k: string): boolean => (prefix ? k.startsWith(base) : k === base);
  const out: { key: string; rev: number; type: 'PUT' | 'DELETE'; line: number; from: number; after: number }[] = [];
  w.segments.forEach((sg, i) => {
    const got = w.events.filter((e) => e.segment === i);
    if (got.length === 0) return;
    const from = sg.startRev > 0 ? sg.startRev : sg.openedAtRev + 1;
    const last = Math.max(...got.map((e) => e.rev));
    const seen = new Set(got.map((e) => `${e.type} ${e.key} ${e.rev}`));
    for (const wr of m.writes) {
      if (wr.rev < from || wr.rev >= last || !inRange(wr.key) || seen.has(`${wr.type} ${wr.key} ${wr.rev}`)) continue;
      out.push({ key: wr.key, rev: wr.rev, type: wr.type, line: wr.line, from, after: Math.min(...got.filter((e) => e.rev > wr.rev).map((e) => e.rev)) });
    }
  });
  return out;
}
