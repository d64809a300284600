/**
 * How the timeline picture writes text and draws its marks: XML escaping (keys are bytes, control characters
 * shown escaped), links to etcd's issues and PRs, the lane sizes, the colours of etcd's concepts, and how a
 * restore or restart of a member looks.
 */
import type { TimelineRestore } from './model.js';
export function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Control characters are not allowed in XML: show them escaped. */
export function label(s: string): string {
  // eslint-disable-next-line no-control-regex
  return esc(s.replace(/[\x00-\x08\x0b\x0c\x0e-\x1f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`));
}

/** Where a mark came from, as the transcript's gutter shows it: the script line of the step. */
export function lineRef(line: number): string {
  return line > 0 ? `line ${line}` : 'before the first step';
}

/** Virtual time as the page shows it: seconds, to the millisecond. */
export function showMs(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))}s`;
}

/** Page text: escaped, `code` spans, and etcd issue / PR numbers as links to etcd's GitHub. */
export function prose(s: string): string {
  return label(s)
    .replace(/`([^`]+)`/g, '<code>$1</code>')
    .replace(/\b(PRs?|pull request|issue|etcd)?(\s*)#(\d{4,5})\b/g, (_m, kind: string | undefined, sp: string, n: string) => {
      const path = kind !== undefined && /^(PRs?|pull request)$/.test(kind) ? 'pull' : 'issues';
      return `${kind ?? ''}${sp}<a href="https://github.com/etcd-io/etcd/${path}/${n}">#${n}</a>`;
    });
}

export const LANE = 26;
export const LEFT = 190;
export const TOP = 46;
/** Width of an elided span of revisions (a break in the axis). */
export const BREAK = 30;
/** An uneventful span at least this long is elided, in a run longer than ELIDE_ABOVE revisions. */
export const MIN_ELIDE = 6;
export const ELIDE_ABOVE = 60;
export const COLORS = { put: '#1f77b4', del: '#d62728', watch: '#2ca02c', lease: '#9467bd', cliff: '#7f7f7f', restore: '#ff7f0e', crash: '#a50f15', leader: '#e6a100', paused: '#8a8a8a', cut: '#ff7f0e', lag: '#8c564b', brk: '#e377c2', read: '#8c564b', step: '#333' };

/** Offsets that keep several marks at one revision apart: `n` marks spread around the revision's x. */
export function spread(n: number, step: number): (i: number) => number {
  const gap = Math.max(3, Math.min(9, (step - 2) / Math.max(n, 1)));
  return (i) => (i - (n - 1) / 2) * gap;
}

/** How a restore mark looks and what it says, by what it stands for. */
export function restoreLook(r: TimelineRestore): { cls: string; color: string; dash: string; short: string; tip: string } {
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

/**
 * Where the numbered step circles go: each at its own x, pushed right just enough (left to right) that no two
 * circles of radius 7 touch — several steps at one revision or moment, or at neighbouring ones, stay readable.
 */
export function stepPlaces(xs: readonly number[], gap = 16): number[] {
  const order = xs.map((x, i) => ({ x, i })).sort((a, b) => a.x - b.x || a.i - b.i);
  const out = new Array<number>(xs.length);
  let last = -Infinity;
  for (const { x, i } of order) {
    last = Math.max(x, last + gap);
    out[i] = last;
  }
  return out;
}

/** A step's circle and number at `sx` (`cy` its centre), with a tick down to its true place `x` when pushed aside. */
export function stepCircle(sx: number, x: number, cy: number, n: number): string {
  const tick = sx - x > 1 ? `<path d="M${sx},${cy + 7}L${x},${cy + 12}" stroke="${COLORS.step}" stroke-width="0.8" fill="none"/>` : '';
  return `${tick}<circle cx="${sx}" cy="${cy}" r="7" fill="#fff" stroke="${COLORS.step}"/><text x="${sx}" y="${cy + 3.5}" text-anchor="middle" font-size="10" fill="${COLORS.step}">${n}</text>`;
}
