/**
 * The revision axis of the picture: etcd's revisions left to right, one column each, except long spans where
 * nothing but more of the same writes and deliveries happen (a `repeat` of 2000 puts, a replay of them), which
 * are elided behind a break mark so the lesson stays on screen.
 */
import type { TimelineModel } from './model.js';
import { BREAK, ELIDE_ABOVE, label, LEFT, MIN_ELIDE } from './look.js';
/** The revision axis: which revisions are drawn one by one, which spans are elided behind a break mark. */
export interface Axis {
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
export function anchorRevisions(m: TimelineModel, maxRev: number): Set<number> {
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

export function buildAxis(m: TimelineModel, maxRev: number): Axis {
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
  const step = Math.max(14, Math.min(48, Math.floor(640 / Math.max(1, visible.length + spans.length))));
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

/** What stands for the marks of an elided span in one lane: a bar across the break, with their count. */
export function elidedBar(axis: Axis, e: { from: number; to: number; n: number }, cy: number, color: string, tip: string, cls: string): string {
  const b = axis.breaks.find((bb) => bb.from === e.from)!;
  return `<g class="${cls}" data-count="${e.n}"><rect x="${b.x + 4}" y="${cy - 4}" width="${BREAK - 8}" height="8" fill="${color}" fill-opacity="0.6"/><text x="${b.x + BREAK / 2}" y="${cy - 7}" text-anchor="middle" font-size="10" fill="${color}">×${e.n}</text><title>${label(tip)}</title></g>`;
}
