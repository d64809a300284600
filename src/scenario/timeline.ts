/**
 * The timeline picture of a scenario run: revisions on the x axis; one lane per key (every write a mark,
 * deletes distinct), one lane per watcher (its cursor, the events it received, cancel, break, resume),
 * one lane per lease (a bar from grant to expiry or revoke); the compaction point drawn as a cliff, restores
 * and restarts as marked lines; reads at the revision they read; the script's notes as numbered steps. On a
 * cluster, one lane per member: who leads from which term, who is stopped, down, cut off or slow, the levers
 * the script pulls and Raft's answers; the time strip below places the same by virtual time. Long runs are
 * compressed: spans where nothing but more of the same writes and deliveries happen are elided behind a
 * break mark. Rendered as one self-contained HTML page with inline SVG (no external resources; the only
 * links are to etcd's issues and PRs named in a description): the description, a predict-first question,
 * the steps beside the picture, the answer, the transcript.
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
const ANSWER = /^Answer:\s*/;
/** A description paragraph that starts with this is the question to answer before running. */
const PREDICT = /^Predict:\s*/;

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

// ---------------------------------------------------------------------------------------------------
// Rendering

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Control characters are not allowed in XML: show them escaped. */
function label(s: string): string {
  // eslint-disable-next-line no-control-regex
  return esc(s.replace(/[\x00-\x08\x0b\x0c\x0e-\x1f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`));
}

/** Where a mark came from, as the transcript's gutter shows it: the script line of the step. */
function lineRef(line: number): string {
  return line > 0 ? `line ${line}` : 'before the first step';
}

/** Virtual time as the page shows it: seconds, to the millisecond. */
function showMs(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))}s`;
}

/** Page text: escaped, `code` spans, and etcd issue / PR numbers as links to etcd's GitHub. */
function prose(s: string): string {
  return label(s)
    .replace(/`([^`]+)`/g, '<code>$1</code>')
    .replace(/\b(PRs?|pull request|issue|etcd)?(\s*)#(\d{4,5})\b/g, (_m, kind: string | undefined, sp: string, n: string) => {
      const path = kind !== undefined && /^(PRs?|pull request)$/.test(kind) ? 'pull' : 'issues';
      return `${kind ?? ''}${sp}<a href="https://github.com/etcd-io/etcd/${path}/${n}">#${n}</a>`;
    });
}

const LANE = 26;
const LEFT = 190;
const TOP = 46;
/** Width of an elided span of revisions (a break in the axis). */
const BREAK = 30;
/** An uneventful span at least this long is elided, in a run longer than ELIDE_ABOVE revisions. */
const MIN_ELIDE = 6;
const ELIDE_ABOVE = 60;
const COLORS = { put: '#1f77b4', del: '#d62728', watch: '#2ca02c', lease: '#9467bd', cliff: '#7f7f7f', restore: '#ff7f0e', crash: '#a50f15', leader: '#e6a100', paused: '#8a8a8a', cut: '#ff7f0e', lag: '#8c564b', brk: '#e377c2', read: '#8c564b', step: '#333' };

/** The revision axis: which revisions are drawn one by one, which spans are elided behind a break mark. */
interface Axis {
  readonly step: number;
  /** The x of a revision (inside a break: spread over the break's width). */
  x(rev: number): number;
  /** The elided span holding `rev`, if any. */
  elidedAt(rev: number): { from: number; to: number } | undefined;
  readonly breaks: readonly { from: number; to: number; x: number }[];
  readonly visible: readonly number[];
  readonly end: number;
}

/**
 * Revisions where something other than a routine write or delivery happens — a watch opens, ends or waits,
 * a compaction, a lease event, a read, a step of the script, the first and last write of a command, a gap
 * in what a watcher received — with one revision either side. Long spans between them are elided, so a run
 * of 2000 revisions stays a picture of a few hundred pixels.
 */
function anchorRevisions(m: TimelineModel, maxRev: number): Set<number> {
  const a = new Set<number>([0, 1, m.maxRevision, maxRev]);
  for (const c of m.compactions) a.add(c.rev);
  for (const r of m.restores) a.add(r.fromRev).add(r.toRev);
  for (const sn of m.snapshots) a.add(sn.rev);
  for (const n of m.notes) a.add(n.rev);
  for (const e of m.memberEvents) a.add(e.atRev);
  for (const r of m.reads) a.add(r.rev);
  for (const l of m.leases) {
    a.add(l.grantedAtRev);
    for (const k of l.keepAlives) a.add(k.atRev);
    if (l.end !== undefined) a.add(l.end.atRev);
  }
  for (const w of m.watchers) {
    a.add(w.cursor).add(w.cursor + 1);
    for (const s of w.segments) {
      a.add(s.openedAtRev).add(s.startRev > 0 ? s.startRev : s.openedAtRev + 1);
      if (s.end !== undefined) a.add(s.end.atRev);
    }
    for (const p of w.progress) a.add(p);
    const revs = w.events.map((e) => e.rev);
    for (let i = 0; i < revs.length; i++) {
      if (i === 0 || i === revs.length - 1 || revs[i]! - revs[i - 1]! !== 1 || revs[i + 1]! - revs[i]! !== 1) a.add(revs[i]!);
    }
  }
  // Writes: the first and last of each run of writes made by one command (a `repeat` makes thousands).
  const byRev = [...m.writes].sort((p, q) => p.rev - q.rev);
  for (let i = 0; i < byRev.length; i++) {
    const w = byRev[i]!;
    const prev = byRev[i - 1];
    const next = byRev[i + 1];
    if (prev === undefined || prev.cause !== w.cause || w.type === 'DELETE' || next === undefined || next.cause !== w.cause) a.add(w.rev);
  }
  const out = new Set<number>();
  for (const r of a) for (const d of [-1, 0, 1]) if (r + d >= 0 && r + d <= maxRev) out.add(r + d);
  return out;
}

function buildAxis(m: TimelineModel, maxRev: number): Axis {
  const keep = maxRev > ELIDE_ABOVE ? anchorRevisions(m, maxRev) : new Set(Array.from({ length: maxRev + 1 }, (_v, i) => i));
  const spans: { from: number; to: number }[] = [];
  let r = 0;
  while (r <= maxRev) {
    if (keep.has(r)) {
      r++;
      continue;
    }
    let e = r;
    while (e + 1 <= maxRev && !keep.has(e + 1)) e++;
    if (e - r + 1 >= MIN_ELIDE) spans.push({ from: r, to: e });
    r = e + 1;
  }
  const inSpan = (rev: number): { from: number; to: number } | undefined => spans.find((sp) => rev >= sp.from && rev <= sp.to);
  const visible: number[] = [];
  for (let v = 0; v <= maxRev; v++) if (inSpan(v) === undefined) visible.push(v);
  const step = Math.max(14, Math.min(48, Math.floor(900 / Math.max(1, visible.length + spans.length))));
  // Left edge of each column: visible revisions get `step`, each elided span one BREAK.
  const left = new Map<number, number>();
  const breaks: { from: number; to: number; x: number }[] = [];
  let cx = LEFT - step / 2;
  for (let v = 0; v <= maxRev; v++) {
    const sp = inSpan(v);
    if (sp === undefined) {
      left.set(v, cx);
      cx += step;
    } else if (v === sp.from) {
      breaks.push({ ...sp, x: cx });
      cx += BREAK;
    }
  }
  const end = cx;
  const x = (rev: number): number => {
    const rv = Math.max(0, Math.min(rev, maxRev));
    const l = left.get(rv);
    if (l !== undefined) return l + step / 2;
    const b = breaks.find((bb) => rv >= bb.from && rv <= bb.to)!;
    return b.x + ((rv - b.from + 0.5) / (b.to - b.from + 1)) * BREAK;
  };
  return { step, x, elidedAt: inSpan, breaks, visible, end };
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

/** Offsets that keep several marks at one revision apart: `n` marks spread around the revision's x. */
function spread(n: number, step: number): (i: number) => number {
  const gap = Math.max(3, Math.min(9, (step - 2) / Math.max(n, 1)));
  return (i) => (i - (n - 1) / 2) * gap;
}

interface Drawing {
  readonly svg: string;
  /** The lane labels alone, as an SVG of the same height (kept in view while the picture scrolls). */
  readonly labels: string;
  readonly width: number;
}

/** How a restore mark looks and what it says, by what it stands for. */
function restoreLook(r: TimelineRestore): { cls: string; color: string; dash: string; short: string; tip: string } {
  switch (r.kind) {
    case 'restart':
      return { cls: 'restore member-restart', color: COLORS.crash, dash: '2 2', short: 'restart', tip: 'SIGKILL, restart: the member rebuilt its index from its backend' };
    case 'crash-during-compact':
      return { cls: 'restore member-restart crash-compact', color: COLORS.crash, dash: '2 2', short: 'killed mid-compaction, restart', tip: `${r.name}; the member restarted, rebuilt its index from what the backend held and ran the compaction again` };
    case 'snapshot-install':
      return { cls: 'restore snapshot-install', color: COLORS.restore, dash: '6 3', short: `snapshot → ${r.member ?? ''}`, tip: `${r.name}: the follower's store restored from the leader's snapshot` };
    default:
      return { cls: 'restore', color: COLORS.restore, dash: '6 3', short: `restore ${r.name}`, tip: `restore ${r.name}` };
  }
}

/** One SVG picture of one run. */
export function renderSvg(m: TimelineModel): string {
  return draw(m).svg;
}

function draw(m: TimelineModel): Drawing {
  const keys = timelineKeys(m);
  const maxRev = Math.max(m.maxRevision, 1) + 1;
  const axis = buildAxis(m, maxRev);
  const { x, step } = axis;
  const { steps } = timelineSteps(m);
  const hasReads = m.reads.length > 0;
  const rows = keys.length + (hasReads ? 1 : 0) + m.watchers.length + m.leases.length + m.members.length;
  const height = TOP + rows * LANE + 40 + (m.watchers.length > 0 ? 10 : 0) + (m.leases.length > 0 ? 10 : 0) + (hasReads ? 6 : 0) + (m.members.length > 0 ? 10 : 0);
  const strip = timeStripRows(m);
  const stripWidth = Math.max(axis.end - LEFT - 20, 600);
  const total = height + (strip.length > 0 ? STRIP_TOP + strip.length * STRIP_ROW + 12 : 0);
  const width = Math.ceil(Math.max(axis.end + 240, LEFT + stripWidth + 120));
  const out: string[] = [];
  const labels: string[] = [];
  const laneLabel = (cy: number, text: string, fill = '#222'): string => {
    const t = `<text class="lane-label" x="${LEFT - 8}" y="${cy + 4}" text-anchor="end" fill="${fill}">${text}</text>`;
    labels.push(t);
    return t;
  };
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="${width}" height="${total}" viewBox="0 0 ${width} ${total}" font-family="monospace" font-size="11" role="img" aria-label="${esc(m.title)}">`,
  );
  out.push(`<title>${esc(m.title)}${m.variant !== undefined ? ` (${esc(m.variant)})` : ''}</title>`);
  // Axis: revisions, with a break mark where an uneventful span is elided.
  out.push('<g class="axis">');
  const tickEvery = Math.max(1, Math.ceil(30 / step));
  let sinceTick = tickEvery;
  let prevVisible = -2;
  for (const r of axis.visible) {
    if (r === 0) continue;
    const afterBreak = r !== prevVisible + 1;
    prevVisible = r;
    sinceTick++;
    if (sinceTick < tickEvery && !afterBreak && r !== 1) continue;
    sinceTick = 0;
    out.push(`<line x1="${x(r)}" y1="${TOP - 6}" x2="${x(r)}" y2="${height - 30}" stroke="#eee"/>`);
    out.push(`<text x="${x(r)}" y="${TOP - 10}" text-anchor="middle" fill="#555">${r}</text>`);
  }
  out.push(`<text x="${LEFT - 8}" y="${TOP - 10}" text-anchor="end" fill="#555">revision →</text>`);
  labels.push(`<text x="${LEFT - 8}" y="${TOP - 10}" text-anchor="end" fill="#555">revision →</text>`);
  out.push('</g>');
  for (const b of axis.breaks) {
    const n = b.to - b.from + 1;
    const zx = b.x + BREAK / 2;
    out.push(
      `<g class="axis-break" data-from="${b.from}" data-to="${b.to}"><rect x="${b.x + 3}" y="${TOP - 4}" width="${BREAK - 6}" height="${height - TOP - 26}" fill="#f4f4f4"/>` +
        `<path d="M${zx - 5},${TOP - 20}l4,-6l2,12l4,-6" stroke="#555" fill="none"/><path d="M${b.x + 3},${TOP - 4}V${height - 30}M${b.x + BREAK - 3},${TOP - 4}V${height - 30}" stroke="#999" stroke-dasharray="2 2"/>` +
        `<text x="${zx}" y="${height - 18}" text-anchor="middle" fill="#777" font-size="9">${n}</text><title>${n} revisions elided (${b.from}..${b.to}): nothing but more of the same writes and deliveries</title></g>`,
    );
  }

  // Compaction cliff: everything left of the latest compaction point is gone.
  const compact = m.compactions.length > 0 ? Math.max(...m.compactions.map((c) => c.rev)) : 0;
  if (compact > 0) {
    const cl = m.compactions.find((c) => c.rev === compact)!;
    out.push(
      `<g class="compaction" data-rev="${compact}" data-line="${cl.line}"><title>compact ${compact} (${lineRef(cl.line)}, t=${showMs(cl.atMs)})</title><rect x="${LEFT}" y="${TOP - 4}" width="${Math.max(0, x(compact) - LEFT)}" height="${height - TOP - 26}" fill="#000" fill-opacity="0.07"/>` +
        `<line class="cliff" x1="${x(compact)}" y1="${TOP - 4}" x2="${x(compact)}" y2="${height - 30}" stroke="${COLORS.cliff}" stroke-width="3"/>` +
        `<text x="${x(compact) + 4}" y="${height - 18}" fill="${COLORS.cliff}">compacted at ${compact}</text></g>`,
    );
  }
  // Restores and restarts: where a member's store jumped or was rebuilt, each drawn as what it is.
  m.restores.forEach((r, i) => {
    const look = restoreLook(r);
    const rx = x(r.toRev) + step / 2;
    out.push(
      `<g class="${look.cls}" data-rev="${r.toRev}" data-line="${r.line}"${r.member !== undefined ? ` data-member="${esc(r.member)}"` : ''}><title>${label(`${look.tip}: revision ${r.fromRev} → ${r.toRev} at t=${showMs(r.atMs)} (${lineRef(r.line)})`)}</title><line x1="${rx}" y1="${TOP - 4}" x2="${rx}" y2="${height - 30}" stroke="${look.color}" stroke-dasharray="${look.dash}" stroke-width="2"/>` +
        `<text x="${rx + 3}" y="${height - 6 - (i % 2) * 11}" fill="${look.color}">${label(look.short)} (${r.fromRev}→${r.toRev})</text></g>`,
    );
  });
  // Steps of the script: numbered marks on the axis, where the step's note was reached.
  const stepsAt = new Map<number, number>();
  for (const st of steps) {
    const k = stepsAt.get(st.rev) ?? 0;
    stepsAt.set(st.rev, k + 1);
    const sx = x(st.rev) + k * 14;
    out.push(
      `<g class="step-marker" data-step="${st.n}" data-rev="${st.rev}" data-line="${st.line}"><circle cx="${sx}" cy="${TOP - 28}" r="7" fill="#fff" stroke="${COLORS.step}"/><text x="${sx}" y="${TOP - 24.5}" text-anchor="middle" font-size="9" fill="${COLORS.step}">${st.n}</text><title>step ${st.n} (line ${st.line}, at revision ${st.rev})</title></g>`,
    );
  }

  let y = TOP;
  // Key lanes.
  out.push('<g class="keys">');
  for (const k of keys) {
    const cy = y + LANE / 2;
    out.push(`<g class="key-lane" data-key="${label(k)}">${laneLabel(cy, label(k))}`);
    out.push(`<line x1="${LEFT}" y1="${cy}" x2="${x(maxRev)}" y2="${cy}" stroke="#ddd"/>`);
    // A key's lifetime: from each put to the next delete.
    const ws = m.writes.filter((w) => w.key === k).sort((a, b) => a.rev - b.rev);
    let liveFrom: number | undefined;
    for (const w of ws) {
      if (w.type === 'PUT' && liveFrom === undefined) liveFrom = w.rev;
      if (w.type === 'DELETE' && liveFrom !== undefined) {
        out.push(`<line class="alive" x1="${x(liveFrom)}" y1="${cy}" x2="${x(w.rev)}" y2="${cy}" stroke="${COLORS.put}" stroke-opacity="0.35" stroke-width="4"/>`);
        liveFrom = undefined;
      }
    }
    if (liveFrom !== undefined) out.push(`<line class="alive" x1="${x(liveFrom)}" y1="${cy}" x2="${x(maxRev)}" y2="${cy}" stroke="${COLORS.put}" stroke-opacity="0.35" stroke-width="4"/>`);
    const elided = new Map<number, { from: number; to: number; n: number }>();
    for (const w of ws) {
      const sp = axis.elidedAt(w.rev);
      if (sp !== undefined) {
        const e = elided.get(sp.from) ?? { ...sp, n: 0 };
        e.n++;
        elided.set(sp.from, e);
        continue;
      }
      const tip = `${w.type} ${w.key}${w.type === 'PUT' ? `=${w.value}` : ''} @${w.rev} (${w.cause}${w.cause === `line ${w.line}` ? '' : `, during ${lineRef(w.line)}`})`;
      if (w.type === 'PUT') {
        out.push(`<circle class="write put" data-key="${label(w.key)}" data-rev="${w.rev}" data-line="${w.line}" cx="${x(w.rev)}" cy="${cy}" r="5" fill="${COLORS.put}"><title>${label(tip)}</title></circle>`);
      } else {
        const sz = 5;
        const byLease = w.cause.startsWith('lease');
        out.push(
          `<path class="write delete tombstone${byLease ? ' lease-delete' : ''}" data-key="${label(w.key)}" data-rev="${w.rev}" data-line="${w.line}" d="M${x(w.rev) - sz},${cy - sz}L${x(w.rev) + sz},${cy + sz}M${x(w.rev) - sz},${cy + sz}L${x(w.rev) + sz},${cy - sz}" stroke="${byLease ? COLORS.lease : COLORS.del}" stroke-width="2.5"><title>${label(tip)}</title></path>`,
        );
      }
    }
    for (const e of elided.values()) out.push(elidedBar(axis, e, cy, COLORS.put, `${e.n} writes to ${k} at revisions ${e.from}..${e.to}`, 'elided-writes'));
    out.push('</g>');
    y += LANE;
  }
  out.push('</g>');

  // Reads: each get at the revision it read (a pinned --rev read filled, a read of the newest revision hollow).
  if (hasReads) {
    y += 6;
    const cy = y + LANE / 2;
    out.push(`<g class="reads-lane">${laneLabel(cy, 'reads (get)', COLORS.read)}`);
    const atRev = new Map<number, number>();
    for (const r of m.reads) atRev.set(r.rev, (atRev.get(r.rev) ?? 0) + 1);
    const seen = new Map<number, number>();
    for (const r of m.reads) {
      const i = seen.get(r.rev) ?? 0;
      seen.set(r.rev, i + 1);
      const rx = x(r.rev) + spread(atRev.get(r.rev)!, step)(i);
      const tip = `line ${r.line}: ${r.command} read at revision ${r.rev}${r.pinned ? ' (pinned --rev)' : ' (newest)'}: ${r.keys.length === 0 ? 'no keys' : r.keys.join(', ')}${r.more ? ', more' : ''}`;
      out.push(
        `<path class="read${r.pinned ? ' pinned' : ''}" data-rev="${r.rev}" data-line="${r.line}" d="M${rx},${cy - 6}l5,6l-5,6l-5,-6z" fill="${r.pinned ? COLORS.read : '#fff'}" stroke="${COLORS.read}" stroke-width="1.5"><title>${label(tip)}</title></path>`,
      );
    }
    out.push('</g>');
    y += LANE;
  }

  // Watcher lanes.
  if (m.watchers.length > 0) y += 10;
  out.push('<g class="watchers">');
  for (const w of m.watchers) {
    const cy = y + LANE / 2;
    out.push(`<g class="watcher-lane" data-watch="${esc(w.name)}">${laneLabel(cy, `watch ${esc(w.name)} ${label(w.range)}${w.member !== undefined ? ` @${esc(w.member)}` : ''}`, COLORS.watch)}`);
    for (const sg of w.segments) {
      const from = sg.startRev > 0 ? sg.startRev : sg.openedAtRev + 1;
      const to = sg.end !== undefined ? Math.max(sg.end.atRev, from) : Math.max(w.cursor, m.maxRevision);
      const tip = `watch from ${sg.startRev > 0 ? `--rev=${sg.startRev}` : 'now'} (opened at revision ${sg.openedAtRev}, t=${showMs(sg.openedAtMs)}, ${lineRef(sg.line)})${sg.end !== undefined ? `; this stream ended (${sg.end.kind}, t=${showMs(sg.end.atMs)}, ${lineRef(sg.end.line)}): dashed` : ''}`;
      const openRef = `data-ref="${esc(`open ${w.name}`)}"`;
      out.push(`<line class="watch-span${sg.end !== undefined ? ' ended' : ''}" data-line="${sg.line}" ${openRef} x1="${x(Math.min(from, maxRev))}" y1="${cy}" x2="${x(Math.min(to, maxRev))}" y2="${cy}" stroke="${COLORS.watch}" stroke-width="2" stroke-dasharray="${sg.end === undefined ? '' : '4 2'}"><title>${label(tip)}</title></line>`);
      out.push(`<path class="watch-start" data-line="${sg.line}" ${openRef} d="M${x(Math.min(from, maxRev))},${cy - 7}L${x(Math.min(from, maxRev)) + 6},${cy}L${x(Math.min(from, maxRev))},${cy + 7}Z" fill="${COLORS.watch}"><title>${label(tip)}</title></path>`);
      if (sg.startRev > maxRev) out.push(`<text x="${x(maxRev) + 10}" y="${cy + 4}" fill="${COLORS.watch}">waits for revision ${sg.startRev}</text>`);
      if (sg.end !== undefined) {
        const ex = x(Math.min(sg.end.atRev, maxRev));
        if (sg.end.kind === 'canceled') {
          out.push(`<g class="watch-canceled" data-compact-revision="${sg.end.compactRevision}" data-line="${sg.end.line}" data-ref="${esc(`cancel ${w.name}`)}"><title>canceled by the server at t=${showMs(sg.end.atMs)} (${lineRef(sg.end.line)})</title><rect x="${ex - 6}" y="${cy - 6}" width="12" height="12" fill="#fff" stroke="${COLORS.del}" stroke-width="2"/><text x="${ex + 9}" y="${cy - 6}" fill="${COLORS.del}">canceled${sg.end.compactRevision > 0 ? `: compact_revision ${sg.end.compactRevision}` : ''}</text></g>`);
        } else if (sg.end.kind === 'broken') {
          out.push(`<path class="watch-break" data-line="${sg.end.line}" d="M${ex - 4},${cy - 9}L${ex + 3},${cy - 2}L${ex - 3},${cy + 2}L${ex + 4},${cy + 9}" stroke="${COLORS.brk}" stroke-width="2.5" fill="none"><title>stream broken at t=${showMs(sg.end.atMs)} (${lineRef(sg.end.line)})</title></path>`);
        } else {
          out.push(`<line class="watch-closed" data-line="${sg.end.line}" x1="${ex}" y1="${cy - 7}" x2="${ex}" y2="${cy + 7}" stroke="${COLORS.watch}" stroke-width="3"><title>closed by the client at t=${showMs(sg.end.atMs)} (${lineRef(sg.end.line)})</title></line>`);
        }
      }
    }
    // Events: several at one revision (a txn) side by side; the same event received again drawn above.
    const seen = new Map<string, number>();
    const perRev = new Map<number, Set<string>>();
    for (const e of w.events) {
      const id = `${e.type} ${e.key}`;
      const set = perRev.get(e.rev) ?? new Set<string>();
      set.add(id);
      perRev.set(e.rev, set);
    }
    const elided = new Map<number, { from: number; to: number; n: number }>();
    for (const e of w.events) {
      const sp = axis.elidedAt(e.rev);
      if (sp !== undefined) {
        const el = elided.get(sp.from) ?? { ...sp, n: 0 };
        el.n++;
        elided.set(sp.from, el);
        continue;
      }
      const id = `${e.type} ${e.key} ${e.rev}`;
      const dup = seen.get(id) ?? 0;
      seen.set(id, dup + 1);
      const group = [...perRev.get(e.rev)!];
      const ex = x(e.rev) + spread(group.length, step)(group.indexOf(`${e.type} ${e.key}`));
      const ey = y + LANE / 2 - dup * 9;
      // What went wrong, flagged: an event below the start revision its stream asked for.
      const seg = e.segment !== undefined ? w.segments[e.segment] : undefined;
      const below = seg !== undefined && seg.startRev > 0 && e.rev < seg.startRev;
      if (below) out.push(`<circle class="flag event-below-start" data-rev="${e.rev}" cx="${ex}" cy="${ey}" r="8" fill="none" stroke="${COLORS.del}" stroke-width="2"><title>${label(`wrong: ${e.type} ${e.key} @${e.rev} is below this watch's start revision ${seg!.startRev}`)}</title></circle>`);
      const tip = `${w.name} received ${e.type} ${e.key} @${e.rev}${group.length > 1 ? ` (${group.indexOf(`${e.type} ${e.key}`) + 1} of ${group.length} events at this revision)` : ''}${dup > 0 ? ` (again: duplicate #${dup + 1})` : ''}${e.fragment === true ? `, in response #${e.response ?? 0}, a fragment (held by the client until the last one)` : ''}, during ${lineRef(e.line)}`;
      const link = `data-line="${e.line}" data-ref="${esc(`watch ${w.name}@${e.rev}`)}"${e.response !== undefined ? ` data-response="${e.response}"${e.fragment === true ? ' data-fragment="true"' : ''}` : ''}`;
      if (e.type === 'PUT') out.push(`<circle class="watch-event put" data-rev="${e.rev}" ${link} cx="${ex}" cy="${ey}" r="4" fill="${COLORS.put}" stroke="#fff"><title>${label(tip)}</title></circle>`);
      else out.push(`<rect class="watch-event delete" data-rev="${e.rev}" ${link} x="${ex - 4}" y="${ey - 4}" width="8" height="8" fill="${COLORS.del}" stroke="#fff"><title>${label(tip)}</title></rect>`);
    }
    for (const el of elided.values()) out.push(elidedBar(axis, el, cy, COLORS.watch, `${w.name} received ${el.n} events at revisions ${el.from}..${el.to}`, 'elided-events'));
    // What went wrong, flagged: a write in the watch's range that its stream skipped, though it delivered later ones.
    for (const miss of missingEvents(m, w)) {
      const mx = x(miss.rev);
      out.push(
        `<g class="flag missing-event" data-rev="${miss.rev}" data-line="${miss.line}"><title>${label(`wrong: ${miss.type} ${miss.key} @${miss.rev} never reached ${w.name}, though its stream asked for revision ${miss.from} on and delivered ${miss.after} after it`)}</title><circle cx="${mx}" cy="${cy}" r="7" fill="none" stroke="${COLORS.del}" stroke-width="2" stroke-dasharray="3 2"/><text class="flag-label" x="${mx}" y="${cy - 10}" text-anchor="middle" fill="${COLORS.del}" font-weight="bold">!</text></g>`,
      );
    }
    w.progress.forEach((p, i) => {
      // What went wrong, flagged: a progress notification that promised revisions the watcher had not yet
      // received (events at or below it arrived after it), or that lies below the watch's start revision.
      const seen = w.progressSeen[i] ?? 0;
      const overtook = w.events.slice(seen).some((e) => e.rev <= p);
      const start = w.segments.filter((sg) => sg.startRev > 0).map((sg) => sg.startRev);
      const belowStart = start.length > 0 && p < Math.min(...start.filter((sr) => sr > 0));
      const wrong = overtook ? `progress ${p} arrived before events at or below ${p}` : belowStart ? `progress ${p} is below the watch's start revision ${Math.min(...start)}` : undefined;
      out.push(
        `<line class="watch-progress${wrong !== undefined ? ' flag' : ''}" data-rev="${p}" data-line="${w.progressLines[i] ?? 0}" data-ref="${esc(`progress ${w.name}@${p}`)}" x1="${x(p) + (wrong !== undefined ? -3 : 0)}" y1="${cy - 10}" x2="${x(p) + (wrong !== undefined ? -3 : 0)}" y2="${cy + 10}" stroke="${wrong !== undefined ? COLORS.del : COLORS.watch}" stroke-width="${wrong !== undefined ? 2.5 : 1.5}"><title>${label(wrong !== undefined ? `wrong: ${wrong}` : `progress notify: revision ${p} (no events up to it are still to come)`)}, during ${lineRef(w.progressLines[i] ?? 0)}</title></line>`,
      );
      if (wrong !== undefined) out.push(`<text class="flag-label" x="${x(p) - 3}" y="${cy - 12}" text-anchor="middle" fill="${COLORS.del}" font-weight="bold">!</text>`);
    });
    const lastSeg = w.segments[w.segments.length - 1];
    if (lastSeg !== undefined && lastSeg.end?.kind !== 'canceled' && lastSeg.end?.kind !== 'closed' && !(lastSeg.startRev > m.maxRevision + 1)) {
      // The resume point: the revision after the last one seen (start_revision is inclusive).
      const next = w.cursor + 1;
      out.push(
        `<path class="watch-cursor" data-rev="${next}" data-last="${w.cursor}" d="M${x(next)},${cy - 12}l-5,-6h10z" fill="${COLORS.watch}"><title>${esc(w.name)} has seen up to revision ${w.cursor}: it resumes with --rev=${next}</title></path>`,
      );
    }
    out.push('</g>');
    y += LANE;
  }
  out.push('</g>');

  // Lease lanes.
  if (m.leases.length > 0) y += 10;
  out.push('<g class="leases">');
  for (const l of m.leases) {
    const cy = y + LANE / 2;
    const to = l.end !== undefined ? l.end.atRev : maxRev;
    const tip = `lease ${l.id} TTL ${l.ttl}s, granted at t=${showMs(l.grantedAtMs)} (${lineRef(l.line)})${l.end !== undefined ? `, ${l.end.kind} at t=${showMs(l.end.atMs)} (during ${lineRef(l.end.line)})` : ''}`;
    out.push(`<g class="lease-lane" data-lease="${esc(l.id)}">${laneLabel(cy, `lease ${esc(l.id.slice(-6))} TTL ${l.ttl}s`, COLORS.lease)}`);
    out.push(`<rect class="lease-bar" data-line="${l.line}" x="${x(l.grantedAtRev)}" y="${cy - 5}" width="${Math.max(x(to) - x(l.grantedAtRev), 3)}" height="10" fill="${COLORS.lease}" fill-opacity="0.5"><title>${esc(tip)}</title></rect>`);
    const kaAt = new Map<number, number>();
    for (const k of l.keepAlives) kaAt.set(k.atRev, (kaAt.get(k.atRev) ?? 0) + 1);
    const kaSeen = new Map<number, number>();
    for (const k of l.keepAlives) {
      const i = kaSeen.get(k.atRev) ?? 0;
      kaSeen.set(k.atRev, i + 1);
      out.push(`<circle class="lease-keepalive" data-line="${k.line}" cx="${x(k.atRev) + spread(kaAt.get(k.atRev)!, step)(i)}" cy="${cy}" r="3" fill="${COLORS.lease}" stroke="#fff"><title>keep-alive at t=${showMs(k.atMs)} (${lineRef(k.line)})</title></circle>`);
    }
    if (l.end !== undefined) {
      out.push(`<line class="lease-end ${l.end.kind}" data-line="${l.end.line}" x1="${x(to)}" y1="${cy - 9}" x2="${x(to)}" y2="${cy + 9}" stroke="${COLORS.lease}" stroke-width="3"/>`);
      out.push(`<text x="${x(to) + 5}" y="${cy + 4}" fill="${COLORS.lease}">${l.end.kind} t=${showMs(l.end.atMs)}</text>`);
    }
    out.push('</g>');
    y += LANE;
  }
  out.push('</g>');
  // A cluster's members on the revision axis: the same stretches and levers, at the revision they happened.
  if (m.members.length > 0) {
    y += 10;
    out.push('<g class="members">');
    for (const name of m.members) {
      const cy = y + LANE / 2;
      out.push(`<g class="member-lane" data-member="${esc(name)}">${laneLabel(cy, esc(name), '#333')}<line x1="${LEFT}" y1="${cy}" x2="${x(maxRev)}" y2="${cy}" stroke="#eee"/>`);
      out.push(drawMemberRow(m, name, cy, { kind: 'rev', x, end: maxRev }));
      out.push('</g>');
      y += LANE;
    }
    out.push('</g>');
  }
  if (strip.length > 0) out.push(drawTimeStrip(m, strip, height, stripWidth, laneLabel));
  out.push('</svg>');
  const labelSvg = `<svg xmlns="http://www.w3.org/2000/svg" class="lane-labels" width="${LEFT}" height="${total}" viewBox="0 0 ${LEFT} ${total}" font-family="monospace" font-size="11" aria-hidden="true">${labels.join('')}</svg>`;
  return { svg: out.join('\n'), labels: labelSvg, width };
}

// ---------------------------------------------------------------------------------------------------
// The time strip: what happens on etcd's own clock, placed by virtual time under the revision axis

/** Height of the strip's axis above its first row, and of each row. */
const STRIP_TOP = 56;
const STRIP_ROW = 22;
/** etcd's lessor checks for expired leases every 500 ms (lessor.go revokeExpiredLeases). */
const EXPIRY_CHECK_MS = 500;

/** One row of the time strip: a watcher's streams, a lease's life, or the compactions and restores. */
type StripRow = { readonly kind: 'watch'; readonly w: TimelineWatcher } | { readonly kind: 'lease'; readonly l: TimelineLease } | { readonly kind: 'store' } | { readonly kind: 'member'; readonly name: string };

/** The restores the store row draws: on a cluster a snapshot installed on a follower is on that member's row instead. */
function storeRestores(m: TimelineModel): TimelineRestore[] {
  return m.restores.filter((r) => r.kind !== 'snapshot-install');
}

/** The strip's rows; none when time never moved (then every mark would sit at t=0 and say nothing). */
function timeStripRows(m: TimelineModel): StripRow[] {
  if (m.endMs <= 0) return [];
  const rows: StripRow[] = [];
  // A cluster's members first: who leads, who is stopped, down, cut off or slow, and the levers pulled.
  for (const name of m.members) rows.push({ kind: 'member', name });
  for (const w of m.watchers) if (w.segments.length > 0) rows.push({ kind: 'watch', w });
  for (const l of m.leases) rows.push({ kind: 'lease', l });
  if (m.compactions.length > 0 || storeRestores(m).length > 0) rows.push({ kind: 'store' });
  return rows;
}

/**
 * When a lease's TTL runs out: its TTL after the last grant or keep-alive, unless a new leader started it over
 * after that (then the expiry that leader's lessor set, as the cluster recorded it).
 */
function leaseDeadline(l: TimelineLease): number {
  const renewed = Math.max(l.grantedAtMs, ...l.keepAlives.map((k) => k.atMs));
  const promoted = (l.promotions ?? []).filter((p) => p.atMs >= renewed);
  const last = promoted[promoted.length - 1];
  return last !== undefined ? last.expiresAtMs : renewed + l.ttl * 1000;
}

/**
 * The time strip: x is virtual time from 0 to the end of the run. Watch opens and their ends (cancel, break,
 * close), lease grants, keep-alives, the moment a TTL runs out and the expiry checks around it (the one
 * that still found the lease alive and the one that revoked it), compactions and restores. Things that
 * share a revision but not a moment (a watch opened, then canceled by the next sync step) are apart here.
 */
function drawTimeStrip(m: TimelineModel, rows: readonly StripRow[], top: number, tw: number, laneLabel: (cy: number, text: string, fill?: string) => string): string {
  const end = Math.max(m.endMs, 1);
  const t0 = LEFT + 10;
  const tx = (ms: number): number => t0 + (Math.max(0, Math.min(ms, end)) / end) * tw;
  const out: string[] = [`<g class="time-strip" data-end-ms="${m.endMs}">`];
  const axisY = top + 38;
  out.push(`<line x1="${LEFT}" y1="${top + 4}" x2="${t0 + tw + 20}" y2="${top + 4}" stroke="#bbb"/>`);
  out.push(`<text x="${LEFT - 8}" y="${axisY - 4}" text-anchor="end" fill="#555">virtual time →</text>`);
  laneLabel(axisY - 8, 'virtual time →', '#555');
  // Tick labels at a round step: about eight of them across the strip.
  const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000, 3_600_000];
  const every = steps.find((st) => end / st <= 8) ?? end;
  const bottom = top + STRIP_TOP + rows.length * STRIP_ROW;
  for (let t = 0; t <= end + 1e-9; t += every) {
    out.push(`<line class="time-tick" x1="${tx(t)}" y1="${axisY}" x2="${tx(t)}" y2="${bottom}" stroke="#f0f0f0"/><text x="${tx(t)}" y="${axisY - 4}" text-anchor="middle" fill="#777" font-size="10">${showMs(t)}</text>`);
  }
  // The script's steps at the moment they were reached, as on the revision axis (several at one moment side by side).
  const stepsAt = new Map<number, number>();
  for (const st of timelineSteps(m).steps) {
    if (st.atMs === undefined) continue;
    const k = stepsAt.get(st.atMs) ?? 0;
    stepsAt.set(st.atMs, k + 1);
    const sx = tx(st.atMs) + k * 14;
    out.push(
      `<g class="time-step" data-step="${st.n}" data-ms="${st.atMs}" data-line="${st.line}"><circle cx="${sx}" cy="${top + 14}" r="7" fill="#fff" stroke="${COLORS.step}"/><text x="${sx}" y="${top + 17.5}" text-anchor="middle" font-size="9" fill="${COLORS.step}">${st.n}</text><title>step ${st.n} (line ${st.line}, at t=${showMs(st.atMs)})</title></g>`,
    );
  }
  // Marks at one moment in one row are spread a few pixels apart, in the order they happened.
  const place = (): ((ms: number) => number) => {
    const n = new Map<number, number>();
    return (ms) => {
      const i = n.get(ms) ?? 0;
      n.set(ms, i + 1);
      return tx(ms) + i * 8;
    };
  };
  rows.forEach((row, i) => {
    const cy = top + STRIP_TOP + i * STRIP_ROW + STRIP_ROW / 2;
    const at = place();
    if (row.kind === 'watch') {
      const w = row.w;
      out.push(`<g class="time-row watch-time" data-watch="${esc(w.name)}">${laneLabel(cy, `t: watch ${esc(w.name)}${w.member !== undefined ? ` @${esc(w.member)}` : ''}`, COLORS.watch)}`);
      for (const sg of w.segments) {
        const x1 = at(sg.openedAtMs);
        const x2 = sg.end !== undefined ? tx(sg.end.atMs) : tx(end);
        out.push(`<line x1="${x1}" y1="${cy}" x2="${Math.max(x2, x1)}" y2="${cy}" stroke="${COLORS.watch}" stroke-width="1.5"${sg.end !== undefined ? ' stroke-dasharray="4 2"' : ''}/>`);
        out.push(
          `<path class="time-mark t-open" data-ms="${sg.openedAtMs}" data-line="${sg.line}" data-ref="${esc(`open ${w.name}`)}" d="M${x1},${cy - 6}L${x1 + 6},${cy}L${x1},${cy + 6}Z" fill="${COLORS.watch}"><title>${label(`watch ${w.name} opened ${sg.startRev > 0 ? `at --rev=${sg.startRev}` : 'from now'} at t=${showMs(sg.openedAtMs)}, revision ${sg.openedAtRev} (${lineRef(sg.line)})`)}</title></path>`,
        );
        if (sg.end !== undefined) {
          const ex = at(sg.end.atMs);
          const tip = label(`watch ${w.name} ${sg.end.kind === 'canceled' ? `canceled by the server${sg.end.compactRevision > 0 ? ` (compact_revision ${sg.end.compactRevision})` : ''}` : sg.end.kind === 'broken' ? 'stream broken' : 'closed by the client'} at t=${showMs(sg.end.atMs)} (during ${lineRef(sg.end.line)})`);
          if (sg.end.kind === 'canceled') out.push(`<rect class="time-mark t-canceled" data-ms="${sg.end.atMs}" data-line="${sg.end.line}" data-ref="${esc(`cancel ${w.name}`)}" x="${ex - 5}" y="${cy - 5}" width="10" height="10" fill="#fff" stroke="${COLORS.del}" stroke-width="2"><title>${tip}</title></rect>`);
          else if (sg.end.kind === 'broken') out.push(`<path class="time-mark t-broken" data-ms="${sg.end.atMs}" data-line="${sg.end.line}" d="M${ex - 4},${cy - 8}L${ex + 3},${cy - 2}L${ex - 3},${cy + 2}L${ex + 4},${cy + 8}" stroke="${COLORS.brk}" stroke-width="2.5" fill="none"><title>${tip}</title></path>`);
          else out.push(`<line class="time-mark t-closed" data-ms="${sg.end.atMs}" data-line="${sg.end.line}" x1="${ex}" y1="${cy - 6}" x2="${ex}" y2="${cy + 6}" stroke="${COLORS.watch}" stroke-width="3"><title>${tip}</title></line>`);
        }
      }
    } else if (row.kind === 'lease') {
      const l = row.l;
      out.push(`<g class="time-row lease-time" data-lease="${esc(l.id)}">${laneLabel(cy, `t: lease ${esc(l.id.slice(-6))}`, COLORS.lease)}`);
      const gx = at(l.grantedAtMs);
      const endMs = l.end !== undefined ? l.end.atMs : end;
      out.push(`<rect x="${gx}" y="${cy - 3}" width="${Math.max(tx(endMs) - gx, 2)}" height="6" fill="${COLORS.lease}" fill-opacity="0.35"/>`);
      out.push(`<path class="time-mark t-grant" data-ms="${l.grantedAtMs}" data-line="${l.line}" d="M${gx},${cy - 6}L${gx + 6},${cy}L${gx},${cy + 6}Z" fill="${COLORS.lease}"><title>${label(`lease ${l.id} granted, TTL ${l.ttl}s, at t=${showMs(l.grantedAtMs)} (${lineRef(l.line)})`)}</title></path>`);
      for (const k of l.keepAlives) {
        out.push(`<circle class="time-mark t-keepalive" data-ms="${k.atMs}" data-line="${k.line}" cx="${at(k.atMs)}" cy="${cy}" r="3.5" fill="${COLORS.lease}" stroke="#fff"><title>${label(`keep-alive at t=${showMs(k.atMs)}: the TTL starts again from here (${lineRef(k.line)})`)}</title></circle>`);
      }
      for (const p of l.promotions ?? []) {
        const px = at(p.atMs);
        out.push(
          `<path class="time-mark t-promote" data-ms="${p.atMs}" data-line="${p.line}" data-expires-ms="${p.expiresAtMs}" d="M${px - 5},${cy + 4}L${px - 5},${cy - 4}L${px - 2.5},${cy}L${px},${cy - 6}L${px + 2.5},${cy}L${px + 5},${cy - 4}L${px + 5},${cy + 4}Z" fill="${COLORS.leader}" stroke="#7a5a00" stroke-width="0.8"><title>${label(`t=${showMs(p.atMs)}: ${p.leader} leads (term ${p.term}); its lessor starts the lease over: it now expires at t=${showMs(p.expiresAtMs)} (${lineRef(p.line)})`)}</title></path>`,
        );
      }
      const deadline = leaseDeadline(l);
      if (l.end === undefined || l.end.kind === 'expired') {
        if (deadline <= end) {
          out.push(`<line class="time-mark t-deadline" data-ms="${deadline}" x1="${tx(deadline)}" y1="${cy - 9}" x2="${tx(deadline)}" y2="${cy + 9}" stroke="${COLORS.lease}" stroke-dasharray="2 2" stroke-width="1.5"><title>${label(`the TTL runs out at t=${showMs(deadline)} (${l.ttl}s after the last grant or keep-alive, or as the last new leader set it); the lease is revoked at the next expiry check`)}</title></line>`);
        }
      }
      if (l.end !== undefined && l.end.kind === 'expired') {
        // The expiry checks that matter: the last one that still found the lease alive, and the one that revoked it.
        const before = l.end.atMs - EXPIRY_CHECK_MS;
        if (before >= 0) out.push(`<line class="time-mark t-check" data-ms="${before}" x1="${tx(before)}" y1="${cy - 7}" x2="${tx(before)}" y2="${cy + 7}" stroke="#999" stroke-width="2"><title>${label(`expiry check at t=${showMs(before)}: the TTL has not run out yet (the lessor checks every ${EXPIRY_CHECK_MS} ms)`)}</title></line>`);
        out.push(`<line class="time-mark t-check t-revoking" data-ms="${l.end.atMs}" data-line="${l.end.line}" x1="${tx(l.end.atMs)}" y1="${cy - 7}" x2="${tx(l.end.atMs)}" y2="${cy + 7}" stroke="#333" stroke-width="2"><title>${label(`expiry check at t=${showMs(l.end.atMs)}: expired; the lessor revokes the lease and deletes its keys in one revision (${l.end.atRev}) (during ${lineRef(l.end.line)})`)}</title></line>`);
      }
      if (l.end !== undefined) {
        const ex = at(l.end.atMs) + (l.end.kind === 'expired' ? 7 : 0);
        out.push(`<path class="time-mark t-lease-end ${l.end.kind}" data-ms="${l.end.atMs}" data-line="${l.end.line}" d="M${ex - 4},${cy - 4}L${ex + 4},${cy + 4}M${ex - 4},${cy + 4}L${ex + 4},${cy - 4}" stroke="${COLORS.lease}" stroke-width="2.5"><title>${label(`lease ${l.id} ${l.end.kind} at t=${showMs(l.end.atMs)}, revision ${l.end.atRev} (during ${lineRef(l.end.line)})`)}</title></path>`);
      }
    } else if (row.kind === 'member') {
      out.push(`<g class="time-row member-time" data-member="${esc(row.name)}">${laneLabel(cy, `t: ${esc(row.name)}`, '#333')}`);
      out.push(drawMemberRow(m, row.name, cy, { kind: 'time', x: tx, end }));
    } else {
      const restarts = storeRestores(m).some((r) => r.kind === 'restart' || r.kind === 'crash-during-compact');
      out.push(`<g class="time-row store-time">${laneLabel(cy, `t: compact / ${restarts ? 'restart' : 'restore'}`, COLORS.cliff)}`);
      for (const c of m.compactions) {
        const cx = at(c.atMs);
        out.push(`<rect class="time-mark t-compact" data-ms="${c.atMs}" data-line="${c.line}" x="${cx - 2}" y="${cy - 8}" width="4" height="16" fill="${COLORS.cliff}"><title>${label(`compact ${c.rev} at t=${showMs(c.atMs)} (${lineRef(c.line)})`)}</title></rect>`);
      }
      for (const r of storeRestores(m)) {
        const rx = at(r.atMs);
        if (r.kind === 'restart' || r.kind === 'crash-during-compact') {
          // A kill (a cross) and the start from the backend (a triangle), at one instant: no time passes between them.
          out.push(
            `<g class="time-mark t-restart${r.kind === 'crash-during-compact' ? ' t-crash-compact' : ''}" data-ms="${r.atMs}" data-line="${r.line}"><title>${label(`${restoreLook(r).tip} at t=${showMs(r.atMs)} (${lineRef(r.line)})`)}</title>` +
              `<path d="M${rx - 4},${cy - 4}L${rx + 4},${cy + 4}M${rx - 4},${cy + 4}L${rx + 4},${cy - 4}" stroke="${COLORS.crash}" stroke-width="2.5"/><path d="M${rx + 6},${cy - 6}L${rx + 12},${cy}L${rx + 6},${cy + 6}Z" fill="${COLORS.crash}"/></g>`,
          );
          continue;
        }
        out.push(`<line class="time-mark t-restore" data-ms="${r.atMs}" data-line="${r.line}" x1="${rx}" y1="${cy - 8}" x2="${rx}" y2="${cy + 8}" stroke="${COLORS.restore}" stroke-dasharray="3 2" stroke-width="2"><title>${label(`restore ${r.name} at t=${showMs(r.atMs)} (${lineRef(r.line)})`)}</title></line>`);
      }
    }
    out.push('</g>');
  });
  out.push('</g>');
  return out.join('\n');
}

/** Where a member row places things: by virtual time (the time strip) or by revision (a lane of the revision axis). */
type MemberAxis = { readonly kind: 'time' | 'rev'; readonly x: (v: number) => number; readonly end: number };

/** A stretch of one member's life on the time strip: leading, down, stopped, cut off, slow, or its link to etcdctl impaired. */
interface MemberSpan {
  readonly kind: 'leader' | 'down' | 'paused' | 'cut' | 'lag' | 'link';
  readonly from: number;
  to: number | undefined;
  /** The same stretch on the revision axis. */
  readonly fromRev: number;
  toRev: number | undefined;
  readonly text: string;
  readonly line: number;
}

/** One member's stretches, from the member events in the order they happened (open ones end with the run). */
export function memberSpans(m: TimelineModel, name: string): MemberSpan[] {
  const spans: MemberSpan[] = [];
  const open = new Map<MemberSpan['kind'], MemberSpan>();
  let rev = 0;
  const close = (kind: MemberSpan['kind'], at: number): void => {
    const sp = open.get(kind);
    if (sp !== undefined) {
      sp.to = at;
      sp.toRev = rev;
    }
    open.delete(kind);
  };
  const start = (kind: MemberSpan['kind'], at: number, text: string, line: number): void => {
    close(kind, at);
    const sp: MemberSpan = { kind, from: at, to: undefined, fromRev: rev, toRev: undefined, text, line };
    spans.push(sp);
    open.set(kind, sp);
  };
  for (const e of m.memberEvents) {
    const mine = e.member === name;
    rev = e.atRev;
    switch (e.kind) {
      case 'leader':
        if (mine) start('leader', e.atMs, `leader (term ${e.term ?? '?'})`, e.line);
        else close('leader', e.atMs);
        break;
      case 'step-down':
        if (mine) close('leader', e.atMs);
        break;
      case 'crash':
        if (mine && !open.has('down')) {
          close('leader', e.atMs);
          start('down', e.atMs, 'down (SIGKILL)', e.line);
        }
        break;
      case 'restart':
        if (mine) close('down', e.atMs);
        break;
      case 'pause':
        if (mine && !open.has('paused')) start('paused', e.atMs, 'paused (SIGSTOP)', e.line);
        break;
      case 'resume':
        if (mine) close('paused', e.atMs);
        break;
      case 'isolate':
        if (mine) start('cut', e.atMs, 'isolated from the other members', e.line);
        break;
      case 'partition':
        if (mine) start('cut', e.atMs, (e.side ?? []).length <= 1 ? 'partitioned: alone' : `partitioned: with ${(e.side ?? []).filter((x) => x !== name).join(' ')}`, e.line);
        break;
      case 'heal':
        close('cut', e.atMs);
        break;
      case 'lag':
        if (mine) {
          if ((e.ms ?? 0) > 0) start('lag', e.atMs, `applies ${showMs(e.ms ?? 0)} late`, e.line);
          else close('lag', e.atMs);
        }
        break;
      case 'drop-link':
        if (mine) start('link', e.atMs, "etcdctl's link dropped", e.line);
        break;
      case 'delay-link':
        if (mine) {
          if ((e.ms ?? 0) > 0) start('link', e.atMs, `etcdctl's link +${showMs(e.ms ?? 0)} each way`, e.line);
          else close('link', e.atMs);
        }
        break;
      case 'restore-link':
        if (mine) close('link', e.atMs);
        break;
      default:
        break;
    }
  }
  return spans;
}

/** How each kind of member stretch is drawn: its band inside the row and its colour. */
const SPAN_LOOK: Readonly<Record<MemberSpan['kind'], { dy: number; h: number; fill: string; opacity: number; outline?: boolean }>> = {
  leader: { dy: -10, h: 20, fill: '#e6a100', opacity: 0.22 },
  down: { dy: -5, h: 10, fill: '#a50f15', opacity: 0.6 },
  paused: { dy: -5, h: 10, fill: '#8a8a8a', opacity: 0.55 },
  cut: { dy: -9, h: 18, fill: '#ff7f0e', opacity: 1, outline: true },
  lag: { dy: 6, h: 4, fill: '#8c564b', opacity: 0.8 },
  link: { dy: -10, h: 4, fill: '#e377c2', opacity: 0.8 },
};

/**
 * One member's row of the time strip: its stretches (leader, down, paused, cut off, slow, link impaired) as
 * bands, and its moments as marks — a crown where it was elected (with the term), a hollow triangle where it
 * stepped down, a dashed line where the leader's snapshot reached it, a diamond for each lever the script pulled.
 */
function drawMemberRow(m: TimelineModel, name: string, cy: number, axis: MemberAxis): string {
  const out: string[] = [];
  const byRev = axis.kind === 'rev';
  const mk = byRev ? 'member-mark' : 'time-mark';
  const n = new Map<number, number>();
  // Marks at one place in the row are spread a few pixels apart, in the order they happened.
  const at = (ms: number, rev: number): number => {
    const p = byRev ? axis.x(rev) : axis.x(ms);
    const i = n.get(p) ?? 0;
    n.set(p, i + 1);
    return p + i * 8;
  };
  for (const sp of memberSpans(m, name)) {
    const look = SPAN_LOOK[sp.kind];
    const x1 = byRev ? axis.x(sp.fromRev) : axis.x(sp.from);
    const x2 = byRev ? axis.x(sp.toRev ?? axis.end) : axis.x(sp.to ?? axis.end);
    const w = Math.max(x2 - x1, 2);
    const tip = `${name} ${sp.text}: t=${showMs(sp.from)} to ${sp.to !== undefined ? `t=${showMs(sp.to)}` : 'the end of the run'}, revision ${sp.fromRev} to ${sp.toRev ?? 'the end'} (from ${lineRef(sp.line)})`;
    const shape = look.outline === true
      ? `<rect x="${x1}" y="${cy + look.dy}" width="${w}" height="${look.h}" fill="none" stroke="${look.fill}" stroke-width="1.5" stroke-dasharray="4 2"/>`
      : `<rect x="${x1}" y="${cy + look.dy}" width="${w}" height="${look.h}" fill="${look.fill}" fill-opacity="${look.opacity}"/>`;
    // A label inside the band when it has room (leader, down, paused); the others say it in their title.
    const text = sp.kind === 'leader' || sp.kind === 'down' || sp.kind === 'paused' ? (sp.kind === 'leader' ? `term ${/term (\d+)/.exec(sp.text)?.[1] ?? ''}` : sp.kind) : '';
    const room = text !== '' && w > text.length * 6 + 16;
    out.push(
      `<g class="member-span span-${sp.kind}" data-member="${esc(name)}" data-from-ms="${sp.from}" data-line="${sp.line}">${shape}${room ? `<text x="${x1 + (sp.kind === 'leader' ? 12 : 3)}" y="${cy + 3.5}" font-size="9" fill="${sp.kind === 'leader' ? '#7a5a00' : '#fff'}">${text}</text>` : ''}<title>${label(tip)}</title></g>`,
    );
  }
  for (const e of m.memberEvents) {
    if (e.member !== name && !(e.member === undefined && e.kind === 'heal')) continue;
    const px = at(e.atMs, e.atRev);
    const tip = label(`t=${showMs(e.atMs)}, revision ${e.atRev}: ${e.text} (${lineRef(e.line)})`);
    const attrs = `data-member="${esc(name)}" data-kind="${e.kind}" data-ms="${e.atMs}" data-line="${e.line}"`;
    if (e.kind === 'leader') {
      out.push(`<path class="${mk} t-leader" ${attrs} data-term="${e.term ?? ''}" d="M${px - 5},${cy + 4}L${px - 5},${cy - 4}L${px - 2.5},${cy}L${px},${cy - 6}L${px + 2.5},${cy}L${px + 5},${cy - 4}L${px + 5},${cy + 4}Z" fill="${COLORS.leader}" stroke="#7a5a00" stroke-width="0.8"><title>${tip}</title></path>`);
    } else if (e.kind === 'step-down') {
      out.push(`<path class="${mk} t-step-down" ${attrs} d="M${px - 5},${cy - 5}L${px + 5},${cy - 5}L${px},${cy + 4}Z" fill="#fff" stroke="#7a5a00" stroke-width="1.5"><title>${tip}</title></path>`);
    } else if (e.kind === 'snapshot') {
      out.push(`<line class="${mk} t-snapshot" ${attrs} x1="${px}" y1="${cy - 10}" x2="${px}" y2="${cy + 10}" stroke="${COLORS.restore}" stroke-dasharray="3 2" stroke-width="2.5"><title>${tip}</title></line>`);
    } else {
      // A lever the script pulled: a diamond, red for a kill.
      const fill = e.kind === 'crash' ? COLORS.crash : e.kind === 'restart' || e.kind === 'resume' || e.kind === 'heal' || e.kind === 'restore-link' ? '#fff' : '#333';
      out.push(`<path class="${mk} t-lever t-${e.kind}" ${attrs} d="M${px},${cy - 5}L${px + 5},${cy}L${px},${cy + 5}L${px - 5},${cy}Z" fill="${fill}" stroke="#333" stroke-width="1.2"><title>${tip}</title></path>`);
    }
  }
  return out.join('');
}

/** What stands for the marks of an elided span in one lane: a bar across the break, with their count. */
function elidedBar(axis: Axis, e: { from: number; to: number; n: number }, cy: number, color: string, tip: string, cls: string): string {
  const b = axis.breaks.find((bb) => bb.from === e.from)!;
  return `<g class="${cls}" data-count="${e.n}"><rect x="${b.x + 4}" y="${cy - 4}" width="${BREAK - 8}" height="8" fill="${color}" fill-opacity="0.6"/><text x="${b.x + BREAK / 2}" y="${cy - 7}" text-anchor="middle" font-size="8" fill="${color}">×${e.n}</text><title>${label(tip)}</title></g>`;
}

/** One legend entry: a small picture and what it means. */
function legendItem(key: string, icon: string, text: string): string {
  return `<li data-legend="${key}"><svg xmlns="http://www.w3.org/2000/svg" width="34" height="20" viewBox="0 0 34 20" aria-hidden="true">${icon}</svg>${text}</li>`;
}

const LEGEND = [
  legendItem('put', `<circle cx="17" cy="10" r="5" fill="${COLORS.put}"/>`, 'put (a write)'),
  legendItem('delete', `<path d="M12,5L22,15M12,15L22,5" stroke="${COLORS.del}" stroke-width="2.5"/>`, 'delete (a tombstone)'),
  legendItem('lease-delete', `<path d="M12,5L22,15M12,15L22,5" stroke="${COLORS.lease}" stroke-width="2.5"/>`, 'delete by a lease (expiry or revoke)'),
  legendItem('alive', `<line x1="2" y1="10" x2="32" y2="10" stroke="${COLORS.put}" stroke-opacity="0.35" stroke-width="4"/>`, 'the key exists'),
  legendItem('compaction', `<rect x="2" y="2" width="20" height="16" fill="#000" fill-opacity="0.07"/><line x1="22" y1="2" x2="22" y2="18" stroke="${COLORS.cliff}" stroke-width="3"/>`, 'compacted history | the cliff'),
  legendItem('restore', `<line x1="17" y1="2" x2="17" y2="18" stroke="${COLORS.restore}" stroke-dasharray="6 3" stroke-width="2"/>`, 'snapshot restore'),
  legendItem('read', `<path d="M10,4l5,6l-5,6l-5,-6z" fill="${COLORS.read}"/><path d="M24,4l5,6l-5,6l-5,-6z" fill="#fff" stroke="${COLORS.read}"/>`, 'a get at its revision: pinned --rev | newest'),
  legendItem('watch', `<path d="M2,3L8,10L2,17Z" fill="${COLORS.watch}"/><line x1="8" y1="10" x2="32" y2="10" stroke="${COLORS.watch}" stroke-width="2"/>`, 'a watch stream, from its start revision'),
  legendItem('ended', `<line x1="2" y1="10" x2="32" y2="10" stroke="${COLORS.watch}" stroke-width="2" stroke-dasharray="4 2"/>`, 'dashed: that stream has ended'),
  legendItem('events', `<circle cx="9" cy="10" r="4" fill="${COLORS.put}"/><rect x="19" y="6" width="8" height="8" fill="${COLORS.del}"/>`, 'events received (side by side when they share a revision)'),
  legendItem('progress', `<line x1="17" y1="0" x2="17" y2="20" stroke="${COLORS.watch}" stroke-width="1.5"/>`, 'progress notification'),
  legendItem('flag', `<line x1="10" y1="4" x2="10" y2="20" stroke="${COLORS.del}" stroke-width="2.5"/><circle cx="24" cy="12" r="6" fill="none" stroke="${COLORS.del}" stroke-width="2"/>`, 'wrong: progress before its events or below the start; an event below the start, or one a stream skipped (dashed)'),
  legendItem('cursor', `<path d="M17,14l-5,-6h10z" fill="${COLORS.watch}"/>`, 'resume point: last revision seen + 1'),
  legendItem('canceled', `<rect x="11" y="4" width="12" height="12" fill="#fff" stroke="${COLORS.del}" stroke-width="2"/>`, 'canceled by the server'),
  legendItem('closed', `<line x1="17" y1="3" x2="17" y2="17" stroke="${COLORS.watch}" stroke-width="3"/>`, 'closed by the client'),
  legendItem('broken', `<path d="M13,1L20,8L14,12L21,19" stroke="${COLORS.brk}" stroke-width="2.5" fill="none"/>`, 'stream broken'),
  legendItem('lease', `<rect x="2" y="5" width="30" height="10" fill="${COLORS.lease}" fill-opacity="0.5"/><circle cx="17" cy="10" r="3" fill="${COLORS.lease}"/>`, 'lease lifetime, keep-alive'),
  legendItem('step', `<circle cx="17" cy="10" r="7" fill="#fff" stroke="${COLORS.step}"/><text x="17" y="13.5" text-anchor="middle" font-size="9" font-family="monospace">1</text>`, 'step of the script (list beside)'),
  legendItem('time-strip', `<path d="M4,4L10,10L4,16Z" fill="${COLORS.watch}"/><rect x="18" y="5" width="10" height="10" fill="#fff" stroke="${COLORS.del}" stroke-width="2"/>`, 'time strip (below): a watch opened | canceled, by virtual time'),
  legendItem('expiry-check', `<line x1="9" y1="3" x2="9" y2="17" stroke="#999" stroke-width="2"/><line x1="17" y1="3" x2="17" y2="17" stroke="${COLORS.lease}" stroke-dasharray="2 2" stroke-width="1.5"/><line x1="25" y1="3" x2="25" y2="17" stroke="#333" stroke-width="2"/>`, 'expiry check (lease alive) | TTL runs out | check that revokes'),
  legendItem('linked', `<circle cx="17" cy="10" r="5" fill="${COLORS.put}" stroke="#f0a000" stroke-width="3"/>`, 'hover or click a mark or a transcript line: the other lights up'),
  legendItem('break', `<rect x="7" y="1" width="20" height="18" fill="#f4f4f4"/><path d="M12,10l4,-6l2,12l4,-6" stroke="#555" fill="none"/>`, 'elided revisions (count below; ×N marks inside)'),
].join('\n');

/** Legend entries of a cluster run's member rows (shown when a page has a cluster run). */
const CLUSTER_LEGEND = [
  legendItem('leader', `<rect x="2" y="0" width="30" height="20" fill="${COLORS.leader}" fill-opacity="0.22"/><path d="M6,14L6,6L8.5,10L11,4L13.5,10L16,6L16,14Z" fill="${COLORS.leader}" stroke="#7a5a00" stroke-width="0.8"/>`, 'elected leader (crown, with its term) | leading; on a lease\'s time row: the new leader starts the lease over'),
  legendItem('step-down', `<path d="M12,5L22,5L17,14Z" fill="#fff" stroke="#7a5a00" stroke-width="1.5"/>`, 'the leader steps down'),
  legendItem('lever', `<path d="M10,5L15,10L10,15L5,10Z" fill="#333"/><path d="M24,5L29,10L24,15L19,10Z" fill="#fff" stroke="#333"/>`, 'a lever the script pulls (pause, isolate, lag, move-leader, ...) | one that undoes it (resume, heal, restart)'),
  legendItem('crash', `<path d="M10,5L15,10L10,15L5,10Z" fill="${COLORS.crash}" stroke="#333"/><rect x="18" y="5" width="14" height="10" fill="${COLORS.crash}" fill-opacity="0.6"/>`, 'crash (SIGKILL) | the member is down'),
  legendItem('paused', `<rect x="2" y="5" width="30" height="10" fill="${COLORS.paused}" fill-opacity="0.55"/>`, 'paused (SIGSTOP) until resume'),
  legendItem('cut', `<rect x="2" y="1" width="30" height="18" fill="none" stroke="${COLORS.cut}" stroke-width="1.5" stroke-dasharray="4 2"/>`, 'cut off from the other members (isolate, partition) until heal'),
  legendItem('lag', `<rect x="2" y="14" width="30" height="4" fill="${COLORS.lag}" fill-opacity="0.8"/>`, 'applies late (lag)'),
  legendItem('link', `<rect x="2" y="2" width="30" height="4" fill="#e377c2" fill-opacity="0.8"/>`, "etcdctl's link to it dropped or delayed"),
  legendItem('snapshot-install', `<line x1="10" y1="1" x2="10" y2="19" stroke="${COLORS.restore}" stroke-dasharray="3 2" stroke-width="2.5"/><line x1="24" y1="1" x2="24" y2="19" stroke="${COLORS.restore}" stroke-dasharray="6 3" stroke-width="2"/>`, "the leader's snapshot installed on a follower: its row | its store's jump on the revision axis"),
].join('\n');

/** Legend entry of a member killed and restarted (a single member's `restart`, `crash-during-compact`). */
const RESTART_LEGEND = legendItem(
  'member-restart',
  `<line x1="8" y1="1" x2="8" y2="19" stroke="${COLORS.crash}" stroke-dasharray="2 2" stroke-width="2"/><path d="M16,6L22,12M16,12L22,6" stroke="${COLORS.crash}" stroke-width="2.5"/><path d="M24,3L30,9L24,15Z" fill="${COLORS.crash}"/>`,
  'killed and restarted (mid-compaction: #19179), its index rebuilt from the backend: on the axis | on the time strip',
);

/** The description as the page shows it: the title line, the question to predict, and labelled paragraphs. */
function descriptionHtml(paragraphs: readonly string[]): { lead: string; body: string; predict: string | undefined } {
  const [first, ...rest] = paragraphs;
  let predict: string | undefined;
  const body: string[] = [];
  for (const p of rest) {
    if (PREDICT.test(p)) {
      predict = p.replace(PREDICT, '');
      continue;
    }
    // A paragraph that opens with a short label ("What goes wrong.") gets it as a heading.
    const m = /^([A-Z][^.]{2,60})\.\s+(.*)$/.exec(p);
    if (m !== null && /^(What goes wrong|What the fix changes|How it was found|The fix|Where|Why)/.test(m[1]!)) {
      body.push(`<h3>${prose(m[1]!)}</h3><p>${prose(m[2]!)}</p>`);
    } else body.push(`<p>${prose(p)}</p>`);
  }
  return { lead: first !== undefined ? `<p class="lead">${prose(first)}</p>` : '', body: body.join('\n'), predict };
}

/**
 * What a transcript line is about, when it is about one named watch: `watch W@5` for `[watch W @5] ...`,
 * `progress W@7` for `[watch W] progress notify: 7`, `open W` for the line that opens or resumes it,
 * `cancel W` for the lines of its cancelation by the server. The timeline's marks carry the same
 * reference, so a line and its mark find each other more precisely than by their script line.
 */
export function transcriptRef(text: string): string | undefined {
  const ev = /^\[watch (\S+) @(\d+)\] /.exec(text);
  if (ev !== null) return `watch ${ev[1]!}@${ev[2]!}`;
  const pr = /^\[watch (\S+)\] progress notify: (\d+)$/.exec(text);
  if (pr !== null) return `progress ${pr[1]!}@${pr[2]!}`;
  const cancel = /^\[watch (\S+)\] (?:watch was canceled|Error: watch is canceled)|^# watch (\S+): canceled/.exec(text);
  if (cancel !== null) return `cancel ${(cancel[1] ?? cancel[2])!}`;
  const open = /^(?:\$ etcdctl watch .*|\S+> watch .*)   # (?:watch (\S+)(?:,| on session)|(\S+) resumed,)/.exec(text);
  if (open !== null) return `open ${(open[1] ?? open[2])!}`;
  return undefined;
}

/**
 * A transcript as HTML: one span per line (its text unchanged, lines joined by newlines, so the text reads as
 * before), carrying the script line that printed it (`data-line`) and what it is about (`data-ref`); the first
 * line of each step shows that script line in the gutter (`data-n`, drawn by CSS, so it is not part of the
 * text). `runOf`, when given, is each line's run (the playground's whole transcript, every variant in one):
 * it goes in `data-run`.
 */
export function transcriptHtml(lines: readonly string[], lineOf: readonly number[], runOf?: readonly number[]): string {
  let prev = '';
  return lines
    .map((t, i) => {
      const n = lineOf.length === lines.length ? lineOf[i]! : 0;
      const run = runOf !== undefined && runOf.length === lines.length ? runOf[i]! : undefined;
      const ref = transcriptRef(t);
      const at = `${run ?? ''}:${n}`;
      const gutter = n > 0 && at !== prev ? ` data-n="${n}"` : '';
      prev = at;
      return `<span class="tl"${run !== undefined ? ` data-run="${run}"` : ''} data-line="${n}"${ref !== undefined ? ` data-ref="${esc(ref)}"` : ''}${gutter}>${label(t)}</span>`;
    })
    .join('\n');
}

/**
 * The page's link between transcript and picture (plain JavaScript, inlined): hovering or clicking a transcript
 * line, a step or a mark lights up the others of the same script line (or of the same watch event), and
 * scrolls the transcript box and the drawing to them. `etcdsimSelect(run, line, ref, sticky)` does the same
 * from outside (the playground's own transcript), and every selection made here is announced to the embedding
 * page as an `etcdsim-select` event on the document.
 */
const LINK_SCRIPT = `
(function () {
  var doc = document;
  function sections() { return doc.querySelectorAll('section.run'); }
  function clear(cls) { doc.querySelectorAll('.' + cls).forEach(function (e) { e.classList.remove(cls); }); }
  function is(attr, v) { return '[' + attr + '="' + CSS.escape(v) + '"]'; }
  function marks(sec, line, ref) {
    var byRef = ref ? sec.querySelectorAll('svg.timeline ' + is('data-ref', ref)) : [];
    return byRef.length > 0 ? byRef : sec.querySelectorAll('svg.timeline ' + is('data-line', line) + ', ol.steps li' + is('data-line', line));
  }
  function lines(sec, line, ref) {
    var byRef = ref ? sec.querySelectorAll('pre.transcript .tl' + is('data-ref', ref)) : [];
    return byRef.length > 0 ? byRef : sec.querySelectorAll('pre.transcript .tl' + is('data-line', line));
  }
  function reveal(ms, ls) {
    var l = ls[0];
    if (l) {
      var pre = l.closest('pre');
      var top = l.offsetTop - pre.clientHeight / 3;
      if (l.offsetTop < pre.scrollTop || l.offsetTop > pre.scrollTop + pre.clientHeight - 20) pre.scrollTop = Math.max(0, top);
    }
    var m = Array.prototype.find.call(ms, function (e) { return e.closest('.scroll'); });
    if (m) {
      var box = m.closest('.scroll');
      var br = box.getBoundingClientRect(), mr = m.getBoundingClientRect();
      if (mr.left < br.left + 200 || mr.right > br.right) box.scrollLeft += mr.left - br.left - br.width / 2;
    }
  }
  function show(sec, line, ref, cls) {
    clear(cls);
    var ms = marks(sec, line, ref), ls = lines(sec, line, ref);
    ms.forEach(function (e) { e.classList.add(cls); });
    ls.forEach(function (e) { e.classList.add(cls); });
    if (cls === 'sel' && ls.length > 0) { var d = ls[0].closest('details'); if (d) d.open = true; }
    reveal(ms, ls);
    var dd = doc.documentElement.dataset;
    dd.litMarks = String(sec.querySelectorAll('svg.timeline .' + cls).length);
    dd.litLines = String(sec.querySelectorAll('pre.transcript .' + cls).length);
    return ms.length;
  }
  window.etcdsimSelect = function (run, line, ref, sticky) {
    var sec = sections()[run];
    if (!sec || !line) { clear(sticky ? 'sel' : 'hl'); return 0; }
    return show(sec, String(line), ref || '', sticky ? 'sel' : 'hl');
  };
  function origin(t) { return t && t.closest ? t.closest('svg.timeline [data-line], pre.transcript .tl, ol.steps li') : null; }
  function handle(e, cls) {
    var el = origin(e.target);
    if (!el) return;
    var line = el.getAttribute('data-line');
    if (!line || line === '0') return;
    var sec = el.closest('section.run');
    var ref = el.getAttribute('data-ref') || '';
    show(sec, line, ref, cls);
    doc.dispatchEvent(new CustomEvent('etcdsim-select', { detail: { run: Array.prototype.indexOf.call(sections(), sec), line: Number(line), ref: ref, sticky: cls === 'sel' } }));
  }
  doc.addEventListener('mouseover', function (e) { handle(e, 'hl'); });
  doc.addEventListener('mouseout', function (e) { if (origin(e.target)) clear('hl'); });
  doc.addEventListener('click', function (e) { handle(e, 'sel'); });
})();
`;

/** A self-contained page: what the scenario is about, then per run its steps beside its picture, its answer, its transcript. */
export function renderHtml(title: string, runs: readonly { model: TimelineModel; transcript: readonly string[] }[]): string {
  const first = runs[0]?.model;
  const cluster = runs.some((r) => r.model.members.length > 0);
  const restarts = runs.some((r) => r.model.restores.some((x) => x.kind === 'restart' || x.kind === 'crash-during-compact'));
  const desc = descriptionHtml(descriptionParagraphs(first?.description ?? []));
  const body: string[] = [];
  for (const r of runs) {
    const m = r.model;
    const { steps, answer } = timelineSteps(m);
    const d = draw(m);
    body.push(`<section class="run"${m.variant !== undefined ? ` data-variant="${esc(m.variant)}"` : ''}>`);
    body.push(`<h2>${m.variant !== undefined ? `variant ${esc(m.variant)}` : 'the run'}${m.settings.length > 0 ? ` <small>(${esc(m.settings.join(', '))})</small>` : ''}</h2>`);
    if (m.failure !== undefined) body.push(`<p class="failure">${label(m.failure)}</p>`);
    body.push('<div class="run-body">');
    body.push(
      `<ol class="steps">${steps.map((st) => `<li value="${st.n}" data-step="${st.n}" data-line="${st.line}" data-rev="${st.rev}">${prose(st.text)} <span class="at">line ${st.line}, revision ${st.rev}${m.endMs > 0 && st.atMs !== undefined ? `, t=${showMs(st.atMs)}` : ''}</span></li>`).join('')}</ol>`,
    );
    body.push(`<div class="figure"><div class="scroll">${d.labels}${d.svg}</div></div>`);
    body.push('</div>');
    if (answer !== undefined) body.push(`<details class="answer"><summary>Answer (predict first, then open)</summary><p>${prose(answer)}</p></details>`);
    body.push(
      `<details class="transcript" open><summary>transcript <small>(the numbers at the left are script lines, as the picture's hover titles cite them; hover or click a line or a mark to see the other)</small></summary><pre class="transcript">${transcriptHtml(r.transcript, m.transcriptLines)}</pre></details>`,
    );
    body.push('</section>');
  }
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; overflow-wrap: anywhere; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.5em; } h3 { font-size: 1em; margin: 1em 0 0.3em; }
p.lead { font-size: 1.05em; font-weight: bold; }
.predict { border-left: 4px solid #2ca02c; background: #f3faf3; padding: 0.5em 0.8em; }
.failure { color: #b00; font-weight: bold; }
ul.legend { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 0.3em 1.2em; font-size: 12px; }
ul.legend li { display: flex; align-items: center; gap: 0.3em; }
.run-body { display: grid; grid-template-columns: minmax(14em, 22em) minmax(0, 1fr); gap: 1em; align-items: start; }
@media (max-width: 1000px) { .run-body { grid-template-columns: minmax(0, 1fr); } }
ol.steps { margin: 0; padding-left: 1.8em; font-size: 14px; }
ol.steps li { margin-bottom: 0.5em; }
ol.steps .at { color: #888; font-size: 11px; white-space: nowrap; }
.figure { min-width: 0; }
.scroll { overflow-x: auto; display: flex; border: 1px solid #ddd; background: #fff; }
.scroll svg.lane-labels { position: sticky; left: 0; z-index: 1; flex: none; background: linear-gradient(to right, #fff 92%, rgba(255,255,255,0)); }
.scroll svg.timeline { flex: none; margin-left: -${LEFT}px; }
pre.transcript { background: #f7f7f7; padding: 0.8em 0.8em 0.8em 3.6em; font-size: 12px; overflow: auto; max-width: 100%; max-height: 32em; position: relative; }
pre.transcript .tl[data-n]::before { content: attr(data-n); position: absolute; left: 0.4em; width: 2.6em; text-align: right; color: #999; }
pre.transcript .tl[data-line]:not([data-line="0"]) { cursor: pointer; }
pre.transcript .tl.hl { background: #fff1b8; } pre.transcript .tl.sel { background: #ffd666; }
svg.timeline [data-line]:not([data-line="0"]) { cursor: pointer; }
svg.timeline .hl:not(text), svg.timeline .hl > :not(text) { stroke: #f0a000; stroke-width: 3px; }
svg.timeline .sel:not(text), svg.timeline .sel > :not(text) { stroke: #d46b08; stroke-width: 3.5px; }
svg.timeline .hl text, svg.timeline .sel text { stroke: none; }
ol.steps li.hl { background: #fff1b8; } ol.steps li.sel { background: #ffd666; }
details.answer { border-left: 4px solid #1f77b4; padding: 0.3em 0.8em; margin: 0.8em 0; }
code { background: #f2f2f2; padding: 0 0.2em; }
</style>
<script>
// Not needed to draw the page: it only records, for checks in a headless browser, that the page was laid out
// (data-rendered, data-writes, data-svg-width, data-overflow-x, data-steps, data-legend, data-scroll-overflow,
// data-labels-position) and whether any script error happened (data-errors).
window.addEventListener('error', function () { var d = document.documentElement.dataset; d.errors = String(Number(d.errors || 0) + 1); });
window.addEventListener('load', function () {
  var d = document.documentElement.dataset;
  var svg = document.querySelector('svg.timeline');
  var scroll = document.querySelector('.scroll');
  var labels = document.querySelector('svg.lane-labels');
  d.writes = String(document.querySelectorAll('svg.timeline .write').length);
  d.svgWidth = String(svg ? Math.round(svg.getBoundingClientRect().width) : 0);
  d.viewport = String(document.documentElement.clientWidth);
  d.overflowX = String(document.documentElement.scrollWidth - document.documentElement.clientWidth);
  d.scrollOverflow = String(scroll ? scroll.scrollWidth - scroll.clientWidth : 0);
  d.labelsPosition = labels ? getComputedStyle(labels).position : 'none';
  d.steps = String(document.querySelectorAll('ol.steps li').length);
  d.legend = String(document.querySelectorAll('ul.legend li').length);
  d.rendered = 'yes';
});
${LINK_SCRIPT}
</script>
</head>
<body>
<h1>${esc(title)}</h1>
${desc.lead}
${desc.predict !== undefined ? `<div class="predict"><strong>Predict first:</strong> ${prose(desc.predict)}</div>` : ''}
<div class="description">${desc.body}</div>
<p>Revisions run left to right; long uneventful spans are elided behind a break mark. Each key has a lane; reads, each
watcher and each lease have one below. Under them, the time strip places what happens on etcd's own clock by virtual
time: watch opens and cancels, lease grants, keep-alives and expiry checks, compactions. The numbered steps beside the
picture are the script's notes, marked on the axis where they happen. Hover a mark for details; hover or click a mark or
a transcript line and the other lights up.${
    cluster
      ? ` On a cluster the time strip has a row per member: who leads (and from which term), who is stopped, down,
cut off or slow, each lever the script pulls and each of Raft's answers (an election, a step-down, a snapshot sent),
at its moment; a watch's lane names the member that serves it (@infra3).`
      : ''
  }${restarts ? ' A member killed and restarted is marked where it rebuilt its index from its backend, on both axes.' : ''}</p>
<ul class="legend">
${LEGEND}${cluster ? `\n${CLUSTER_LEGEND}` : ''}${restarts ? `\n${RESTART_LEGEND}` : ''}
</ul>
${body.join('\n')}
</body>
</html>
`;
}
