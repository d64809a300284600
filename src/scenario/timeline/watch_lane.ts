/**
 * A watcher's lane: each of its streams from the revision it starts at (etcd's start_revision, inclusive) to
 * its end — canceled by the server (a compacted start revision), broken, closed — the events it received
 * (several of one txn side by side, a duplicate above), its progress notifications, and its resume cursor.
 * What went wrong is flagged: an event below the start revision, a skipped event (#19179), a progress
 * notification that overtook events (#15220).
 */
import { elidedBar } from './axis.js';
import type { Canvas } from './draw.js';
import { COLORS, esc, label, LANE, lineRef, showMs, spread } from './look.js';
import { missingEvents, type TimelineWatcher } from './model.js';

/** One lane per watcher; returns the y below them. */
export function drawWatcherLanes(c: Canvas, top: number): number {
  let y = top;
  if (c.m.watchers.length > 0) y += 10;
  c.out.push('<g class="watchers">');
  for (const w of c.m.watchers) {
    drawWatcherLane(c, w, y);
    y += LANE;
  }
  c.out.push('</g>');
  return y;
}

function drawWatcherLane(c: Canvas, w: TimelineWatcher, y: number): void {
  const { m, axis, out, maxRev, laneLabel } = c;
  const { x, step } = axis;
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
}
