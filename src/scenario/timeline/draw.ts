/**
 * The picture of one run, as inline SVG: the revision axis with its steps, the compaction cliff and restores,
 * then one lane per key, the reads, one per watcher, per lease and per member, and the time strip under them.
 */
import type { Axis } from './axis.js';
import { buildAxis } from './axis.js';
import { drawKeyLanes, drawLeaseLanes, drawMemberLanes, drawReadsLane, readLabelEnd } from './lanes.js';
import { BREAK, COLORS, esc, label, LANE, LEFT, lineRef, restoreLook, showMs, stepCircle, stepPlaces, TOP } from './look.js';
import { timelineKeys, timelineSteps, type TimelineModel } from './model.js';
import { drawTimeStrip, STRIP_ROW, STRIP_TOP, timeStripRows } from './time_strip.js';
import { drawWatcherLanes } from './watch_lane.js';

export interface Drawing {
  readonly svg: string;
  readonly width: number;
}

/** What every part of the picture draws on: the run, its revision axis, the SVG being written, the label column. */
export interface Canvas {
  readonly m: TimelineModel;
  readonly axis: Axis;
  /** The last revision drawn (one past the run's last, where open things end). */
  readonly maxRev: number;
  readonly out: string[];
  /** A lane's label, right-aligned against the drawing. */
  laneLabel(cy: number, text: string, fill?: string): string;
}

/** Where a label written from `x` ends (11 px monospace). */
function textEnd(x: number, text: string): number {
  return x + text.length * 6.7;
}

/** One SVG picture of one run. */
export function renderSvg(m: TimelineModel): string {
  return draw(m).svg;
}

export function draw(m: TimelineModel): Drawing {
  const keys = timelineKeys(m);
  const maxRev = Math.max(m.maxRevision, 1) + 1;
  const axis = buildAxis(m, maxRev);
  const hasReads = m.reads.length > 0;
  const rows = keys.length + m.reads.length + m.watchers.length + m.leases.length + m.members.length;
  const lanesEnd = TOP + rows * LANE + 40 + (m.watchers.length > 0 ? 10 : 0) + (m.leases.length > 0 ? 10 : 0) + (hasReads ? 6 : 0) + (m.members.length > 0 ? 10 : 0);
  // Restores and restarts get two rows of labels of their own under the compaction's, so no label covers another.
  const height = lanesEnd + (m.restores.length > 0 ? 22 : 0);
  const strip = timeStripRows(m);
  // As wide as the revision axis, but no narrower than eight time ticks need; a short run's picture then fits an
  // 800 px window unscaled, its labels at their own size.
  const stripWidth = Math.max(axis.end - LEFT - 20, 420);
  const total = height + (strip.length > 0 ? STRIP_TOP + strip.length * STRIP_ROW + 12 : 0);
  // Room on the right for what is written beside the last revisions (a read's keys, a watch waiting for a revision).
  const ends = [
    ...m.watchers.flatMap((w) => w.segments.filter((sg) => sg.startRev > maxRev).map((sg) => textEnd(axis.x(maxRev) + 10, `waits for revision ${sg.startRev}`))),
    ...m.restores.map((r) => textEnd(axis.x(r.toRev) + axis.step / 2 + 3, `${restoreLook(r).short} (${r.fromRev}→${r.toRev})`)),
    ...m.reads.map((r) => readLabelEnd({ axis }, r)),
  ];
  const width = Math.ceil(Math.max(axis.end + 150, LEFT + stripWidth + 120, ...ends.map((e) => e + 10)));
  const out: string[] = [];
  const laneLabel = (cy: number, text: string, fill = '#222'): string => `<text class="lane-label" x="${LEFT - 8}" y="${cy + 4}" text-anchor="end" fill="${fill}">${text}</text>`;
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="${width}" height="${total}" viewBox="0 0 ${width} ${total}" font-family="monospace" font-size="11" role="img" aria-label="${esc(m.title)}">`,
  );
  out.push(`<title>${esc(m.title)}${m.variant !== undefined ? ` (${esc(m.variant)})` : ''}</title>`);
  const c: Canvas = { m, axis, maxRev, out, laneLabel };
  drawRevisionAxis(c, lanesEnd);
  drawStoreMarks(c, lanesEnd, height);
  let y = TOP;
  y = drawKeyLanes(c, y);
  y = drawReadsLane(c, y);
  y = drawWatcherLanes(c, y);
  y = drawLeaseLanes(c, y);
  drawMemberLanes(c, y);
  if (strip.length > 0) out.push(drawTimeStrip(m, strip, height, stripWidth, laneLabel));
  out.push('</svg>');
  return { svg: out.join('\n'), width };
}

/** The axis: revisions, with a break mark where an uneventful span is elided. */
function drawRevisionAxis(c: Canvas, height: number): void {
  const { axis, out } = c;
  const { x, step } = axis;
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
  out.push('</g>');
  for (const b of axis.breaks) {
    const n = b.to - b.from + 1;
    const zx = b.x + BREAK / 2;
    out.push(
      `<g class="axis-break" data-from="${b.from}" data-to="${b.to}"><rect x="${b.x + 3}" y="${TOP - 4}" width="${BREAK - 6}" height="${height - TOP - 26}" fill="#f4f4f4"/>` +
        `<path d="M${zx - 5},${TOP - 20}l4,-6l2,12l4,-6" stroke="#555" fill="none"/><path d="M${b.x + 3},${TOP - 4}V${height - 30}M${b.x + BREAK - 3},${TOP - 4}V${height - 30}" stroke="#999" stroke-dasharray="2 2"/>` +
        `<text x="${zx}" y="${height - 18}" text-anchor="middle" fill="#777" font-size="10">${n}</text><title>${n} revisions elided (${b.from}..${b.to}): nothing but more of the same writes and deliveries</title></g>`,
    );
  }
}

/** What happened to the store as a whole: the compaction cliff, restores and restarts, and the script's steps. */
function drawStoreMarks(c: Canvas, height: number, bottom: number): void {
  const { m, axis, out } = c;
  const { x, step } = axis;
  const { steps } = timelineSteps(m);
  // Compaction cliff: everything left of the latest compaction point is gone.
  const compact = m.compactions.length > 0 ? Math.max(...m.compactions.map((c) => c.rev)) : 0;
  if (compact > 0) {
    const cl = m.compactions.find((c) => c.rev === compact)!;
    out.push(
      `<g class="compaction" data-rev="${compact}" data-line="${cl.line}"><title>compact ${compact} (${lineRef(cl.line)}, t=${showMs(cl.atMs)})</title><rect x="${LEFT}" y="${TOP - 4}" width="${Math.max(0, x(compact) - LEFT)}" height="${height - TOP - 26}" fill="#000" fill-opacity="0.07"/>` +
        `<line class="cliff" x1="${x(compact)}" y1="${TOP - 4}" x2="${x(compact)}" y2="${height - 30}" stroke="${COLORS.cliff}" stroke-width="3"/>` +
        `<text x="${x(compact) + 4}" y="${height - 6}" fill="${COLORS.cliff}">compacted at ${compact}</text></g>`,
    );
  }
  // Restores and restarts: where a member's store jumped or was rebuilt, each drawn as what it is.
  m.restores.forEach((r, i) => {
    const look = restoreLook(r);
    const rx = x(r.toRev) + step / 2;
    out.push(
      `<g class="${look.cls}" data-rev="${r.toRev}" data-line="${r.line}"${r.member !== undefined ? ` data-member="${esc(r.member)}"` : ''}><title>${label(`${look.tip}: revision ${r.fromRev} → ${r.toRev} at t=${showMs(r.atMs)} (${lineRef(r.line)})`)}</title><line x1="${rx}" y1="${TOP - 4}" x2="${rx}" y2="${height - 30}" stroke="${look.color}" stroke-dasharray="${look.dash}" stroke-width="2"/>` +
        `<text x="${rx + 3}" y="${bottom - 6 - (i % 2) * 11}" fill="${look.color}">${label(look.short)} (${r.fromRev}→${r.toRev})</text></g>`,
    );
  });
  // Steps of the script: numbered marks on the axis, where the step's note was reached.
  const at = stepPlaces(steps.map((st) => x(st.rev)));
  steps.forEach((st, i) => {
    out.push(
      `<g class="step-marker" data-step="${st.n}" data-rev="${st.rev}" data-line="${st.line}">${stepCircle(at[i]!, x(st.rev), TOP - 28, st.n)}<title>step ${st.n} (line ${st.line}, at revision ${st.rev})</title></g>`,
    );
  });
}
