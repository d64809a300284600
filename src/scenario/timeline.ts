/**
 * The timeline picture of a scenario run: revisions on the x axis; one lane per key (every write a mark,
 * deletes distinct), one lane per watcher (its cursor, the events it received, cancel, break, resume),
 * one lane per lease (a bar from grant to expiry or revoke); the compaction point drawn as a cliff, restores
 * as marked lines. Rendered as one self-contained HTML page with inline SVG: no scripts, no external resources.
 */

export interface TimelineWrite {
  readonly key: string;
  readonly rev: number;
  readonly type: 'PUT' | 'DELETE';
  readonly value: string;
  /** What made it: the script line, or the lease expiry loop, or a restored snapshot. */
  readonly cause: string;
}

export interface TimelineWatchEvent {
  readonly key: string;
  readonly rev: number;
  readonly type: 'PUT' | 'DELETE';
}

export interface TimelineWatchSegment {
  /** Requested start revision (0: from now). */
  readonly startRev: number;
  /** Store revision when the watch (or resume) was opened. */
  readonly openedAtRev: number;
  /** How this stream ended, if it did. */
  end: { kind: 'canceled' | 'broken' | 'closed'; atRev: number; compactRevision: number } | undefined;
}

export interface TimelineWatcher {
  readonly name: string;
  readonly range: string;
  readonly segments: TimelineWatchSegment[];
  readonly events: TimelineWatchEvent[];
  readonly progress: number[];
  /** The last revision this watcher has seen (its resume cursor is this + 1). */
  cursor: number;
}

export interface TimelineLease {
  readonly id: string;
  readonly ttl: number;
  readonly grantedAtRev: number;
  readonly grantedAtMs: number;
  keepAlives: { atRev: number; atMs: number }[];
  end: { kind: 'expired' | 'revoked'; atRev: number; atMs: number } | undefined;
}

export interface TimelineModel {
  readonly title: string;
  readonly variant: string | undefined;
  readonly settings: readonly string[];
  maxRevision: number;
  readonly writes: TimelineWrite[];
  readonly compactions: { rev: number; line: number }[];
  readonly watchers: TimelineWatcher[];
  readonly leases: TimelineLease[];
  readonly restores: { name: string; fromRev: number; toRev: number; line: number }[];
  readonly snapshots: { name: string; rev: number; line: number }[];
  /** Set when the run stopped at a failed expectation or an error. */
  failure: string | undefined;
}

export function emptyTimeline(title: string, variant: string | undefined, settings: readonly string[]): TimelineModel {
  return { title, variant, settings, maxRevision: 1, writes: [], compactions: [], watchers: [], leases: [], restores: [], snapshots: [], failure: undefined };
}

/** Distinct keys in byte order (as etcd orders them). */
export function timelineKeys(m: TimelineModel): string[] {
  const keys = new Set<string>();
  for (const w of m.writes) keys.add(w.key);
  return [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
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

const LANE = 26;
const LEFT = 190;
const TOP = 46;
const COLORS = { put: '#1f77b4', del: '#d62728', watch: '#2ca02c', lease: '#9467bd', cliff: '#7f7f7f', restore: '#ff7f0e', brk: '#e377c2' };

/** One SVG picture of one run. */
export function renderSvg(m: TimelineModel): string {
  const keys = timelineKeys(m);
  const maxRev = Math.max(m.maxRevision, 1) + 1;
  const step = Math.max(14, Math.min(48, Math.floor(900 / maxRev)));
  const x = (rev: number): number => LEFT + rev * step;
  const rows = keys.length + m.watchers.length + m.leases.length;
  const height = TOP + rows * LANE + 40 + (m.watchers.length > 0 ? 10 : 0) + (m.leases.length > 0 ? 10 : 0);
  const width = x(maxRev) + 240;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="monospace" font-size="11" role="img" aria-label="${esc(m.title)}">`,
  );
  out.push(`<title>${esc(m.title)}${m.variant !== undefined ? ` (${esc(m.variant)})` : ''}</title>`);
  // Axis: revisions.
  out.push('<g class="axis">');
  const tickEvery = Math.max(1, Math.ceil(30 / step));
  for (let r = 1; r <= maxRev; r++) {
    if (r % tickEvery !== 0 && r !== 1) continue;
    out.push(`<line x1="${x(r)}" y1="${TOP - 6}" x2="${x(r)}" y2="${height - 30}" stroke="#eee"/>`);
    out.push(`<text x="${x(r)}" y="${TOP - 10}" text-anchor="middle" fill="#555">${r}</text>`);
  }
  out.push(`<text x="${LEFT - 8}" y="${TOP - 10}" text-anchor="end" fill="#555">revision →</text>`);
  out.push('</g>');

  // Compaction cliff: everything left of the latest compaction point is gone.
  const compact = m.compactions.length > 0 ? Math.max(...m.compactions.map((c) => c.rev)) : 0;
  if (compact > 0) {
    out.push(
      `<g class="compaction" data-rev="${compact}"><rect x="${LEFT}" y="${TOP - 4}" width="${x(compact) - LEFT}" height="${height - TOP - 26}" fill="#000" fill-opacity="0.07"/>` +
        `<line class="cliff" x1="${x(compact)}" y1="${TOP - 4}" x2="${x(compact)}" y2="${height - 30}" stroke="${COLORS.cliff}" stroke-width="3"/>` +
        `<text x="${x(compact) + 4}" y="${height - 18}" fill="${COLORS.cliff}">compacted at ${compact}</text></g>`,
    );
  }
  // Restores.
  for (const r of m.restores) {
    out.push(
      `<g class="restore" data-rev="${r.toRev}"><line x1="${x(r.toRev) + step / 2}" y1="${TOP - 4}" x2="${x(r.toRev) + step / 2}" y2="${height - 30}" stroke="${COLORS.restore}" stroke-dasharray="6 3" stroke-width="2"/>` +
        `<text x="${x(r.toRev) + step / 2 + 3}" y="${height - 6}" fill="${COLORS.restore}">restore ${esc(r.name)} (${r.fromRev}→${r.toRev})</text></g>`,
    );
  }

  let y = TOP;
  // Key lanes.
  out.push('<g class="keys">');
  for (const k of keys) {
    const cy = y + LANE / 2;
    out.push(`<g class="key-lane" data-key="${label(k)}"><text x="${LEFT - 8}" y="${cy + 4}" text-anchor="end">${label(k)}</text>`);
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
    for (const w of ws) {
      const tip = `${w.type} ${w.key}${w.type === 'PUT' ? `=${w.value}` : ''} @${w.rev} (${w.cause})`;
      if (w.type === 'PUT') {
        out.push(`<circle class="write put" data-key="${label(w.key)}" data-rev="${w.rev}" cx="${x(w.rev)}" cy="${cy}" r="5" fill="${COLORS.put}"><title>${label(tip)}</title></circle>`);
      } else {
        const s = 5;
        out.push(
          `<path class="write delete tombstone" data-key="${label(w.key)}" data-rev="${w.rev}" d="M${x(w.rev) - s},${cy - s}L${x(w.rev) + s},${cy + s}M${x(w.rev) - s},${cy + s}L${x(w.rev) + s},${cy - s}" stroke="${COLORS.del}" stroke-width="2.5"><title>${label(tip)}</title></path>`,
        );
      }
    }
    out.push('</g>');
    y += LANE;
  }
  out.push('</g>');

  // Watcher lanes.
  if (m.watchers.length > 0) y += 10;
  out.push('<g class="watchers">');
  for (const w of m.watchers) {
    const cy = y + LANE / 2;
    out.push(`<g class="watcher-lane" data-watch="${esc(w.name)}"><text x="${LEFT - 8}" y="${cy + 4}" text-anchor="end" fill="${COLORS.watch}">watch ${esc(w.name)} ${label(w.range)}</text>`);
    for (const s of w.segments) {
      const from = s.startRev > 0 ? s.startRev : s.openedAtRev + 1;
      const to = s.end !== undefined ? Math.max(s.end.atRev, from) : Math.max(w.cursor, m.maxRevision);
      out.push(`<line class="watch-span" x1="${x(Math.min(from, maxRev))}" y1="${cy}" x2="${x(Math.min(to, maxRev))}" y2="${cy}" stroke="${COLORS.watch}" stroke-width="2" stroke-dasharray="${s.end === undefined ? '' : '4 2'}"/>`);
      out.push(`<path class="watch-start" d="M${x(Math.min(from, maxRev))},${cy - 7}L${x(Math.min(from, maxRev)) + 6},${cy}L${x(Math.min(from, maxRev))},${cy + 7}Z" fill="${COLORS.watch}"><title>watch from ${s.startRev > 0 ? `--rev=${s.startRev}` : 'now'} (opened at revision ${s.openedAtRev})</title></path>`);
      if (s.startRev > maxRev) out.push(`<text x="${x(maxRev) + 10}" y="${cy + 4}" fill="${COLORS.watch}">waits for revision ${s.startRev}</text>`);
      if (s.end !== undefined) {
        const ex = x(Math.min(s.end.atRev, maxRev));
        if (s.end.kind === 'canceled') {
          out.push(`<g class="watch-canceled" data-compact-revision="${s.end.compactRevision}"><rect x="${ex - 6}" y="${cy - 6}" width="12" height="12" fill="#fff" stroke="${COLORS.del}" stroke-width="2"/><text x="${ex + 9}" y="${cy - 6}" fill="${COLORS.del}">canceled${s.end.compactRevision > 0 ? `: compact_revision ${s.end.compactRevision}` : ''}</text></g>`);
        } else if (s.end.kind === 'broken') {
          out.push(`<path class="watch-break" d="M${ex - 4},${cy - 9}L${ex + 3},${cy - 2}L${ex - 3},${cy + 2}L${ex + 4},${cy + 9}" stroke="${COLORS.brk}" stroke-width="2.5" fill="none"><title>stream broken</title></path>`);
        } else {
          out.push(`<line class="watch-closed" x1="${ex}" y1="${cy - 7}" x2="${ex}" y2="${cy + 7}" stroke="${COLORS.watch}" stroke-width="3"/>`);
        }
      }
    }
    const seen = new Map<string, number>();
    for (const e of w.events) {
      const ex = x(e.rev);
      const id = `${e.type} ${e.key} ${e.rev}`;
      const dup = seen.get(id) ?? 0;
      seen.set(id, dup + 1);
      // A duplicate delivery is drawn above the first one, so it can be seen.
      const cy = y + LANE / 2 - dup * 9;
      const tip = `${w.name} received ${e.type} ${e.key} @${e.rev}${dup > 0 ? ` (again: duplicate #${dup + 1})` : ''}`;
      if (e.type === 'PUT') out.push(`<circle class="watch-event put" data-rev="${e.rev}" cx="${ex}" cy="${cy}" r="4" fill="${COLORS.put}" stroke="#fff"><title>${label(tip)}</title></circle>`);
      else out.push(`<rect class="watch-event delete" data-rev="${e.rev}" x="${ex - 4}" y="${cy - 4}" width="8" height="8" fill="${COLORS.del}" stroke="#fff"><title>${label(tip)}</title></rect>`);
    }
    for (const p of w.progress) out.push(`<line class="watch-progress" x1="${x(p)}" y1="${cy - 10}" x2="${x(p)}" y2="${cy + 10}" stroke="${COLORS.watch}" stroke-width="1"><title>progress notify ${p}</title></line>`);
    const lastSeg = w.segments[w.segments.length - 1];
    if (lastSeg !== undefined && lastSeg.end?.kind !== 'canceled' && lastSeg.end?.kind !== 'closed' && !(lastSeg.startRev > m.maxRevision + 1)) out.push(`<path class="watch-cursor" data-rev="${w.cursor}" d="M${x(w.cursor)},${cy - 12}l-5,-6h10z" fill="${COLORS.watch}"><title>${esc(w.name)} has seen up to revision ${w.cursor}</title></path>`);
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
    const tip = `lease ${l.id} TTL ${l.ttl}s, granted at t=${l.grantedAtMs / 1000}s${l.end !== undefined ? `, ${l.end.kind} at t=${l.end.atMs / 1000}s` : ''}`;
    out.push(`<g class="lease-lane" data-lease="${esc(l.id)}"><text x="${LEFT - 8}" y="${cy + 4}" text-anchor="end" fill="${COLORS.lease}">lease ${esc(l.id.slice(-6))} TTL ${l.ttl}s</text>`);
    out.push(`<rect class="lease-bar" x="${x(l.grantedAtRev)}" y="${cy - 5}" width="${Math.max(x(to) - x(l.grantedAtRev), 3)}" height="10" fill="${COLORS.lease}" fill-opacity="0.5"><title>${esc(tip)}</title></rect>`);
    for (const k of l.keepAlives) out.push(`<circle class="lease-keepalive" cx="${x(k.atRev)}" cy="${cy}" r="3" fill="${COLORS.lease}"><title>keep-alive at t=${k.atMs / 1000}s</title></circle>`);
    if (l.end !== undefined) {
      out.push(`<line class="lease-end ${l.end.kind}" x1="${x(to)}" y1="${cy - 9}" x2="${x(to)}" y2="${cy + 9}" stroke="${COLORS.lease}" stroke-width="3"/>`);
      out.push(`<text x="${x(to) + 5}" y="${cy + 4}" fill="${COLORS.lease}">${l.end.kind} t=${l.end.atMs / 1000}s</text>`);
    }
    out.push('</g>');
    y += LANE;
  }
  out.push('</g>');
  out.push('</svg>');
  return out.join('\n');
}

const LEGEND = `<svg xmlns="http://www.w3.org/2000/svg" class="legend" width="900" height="56" font-family="monospace" font-size="11">
<circle cx="10" cy="12" r="5" fill="${COLORS.put}"/><text x="20" y="16">put (a write)</text>
<path d="M125,7L135,17M125,17L135,7" stroke="${COLORS.del}" stroke-width="2.5"/><text x="142" y="16">delete (tombstone)</text>
<line x1="290" y1="12" x2="320" y2="12" stroke="${COLORS.put}" stroke-opacity="0.35" stroke-width="4"/><text x="326" y="16">key exists</text>
<rect x="420" y="4" width="22" height="16" fill="#000" fill-opacity="0.07"/><line x1="442" y1="4" x2="442" y2="20" stroke="${COLORS.cliff}" stroke-width="3"/><text x="448" y="16">compacted history | cliff</text>
<line x1="640" y1="4" x2="640" y2="20" stroke="${COLORS.restore}" stroke-dasharray="6 3" stroke-width="2"/><text x="646" y="16">snapshot restore</text>
<path d="M4,33L10,40L4,47Z" fill="${COLORS.watch}"/><line x1="10" y1="40" x2="40" y2="40" stroke="${COLORS.watch}" stroke-width="2"/><text x="46" y="44">watcher from its start revision</text>
<circle cx="290" cy="40" r="4" fill="${COLORS.put}"/><rect x="298" y="36" width="8" height="8" fill="${COLORS.del}"/><text x="312" y="44">events received</text>
<path d="M440,28l-5,-6h10z" transform="translate(0,12)" fill="${COLORS.watch}"/><text x="450" y="44">cursor</text>
<rect x="510" y="34" width="12" height="12" fill="#fff" stroke="${COLORS.del}" stroke-width="2"/><text x="527" y="44">canceled</text>
<path d="M600,31L607,38L601,42L608,49" stroke="${COLORS.brk}" stroke-width="2.5" fill="none"/><text x="614" y="44">stream broken</text>
<rect x="720" y="35" width="40" height="10" fill="${COLORS.lease}" fill-opacity="0.5"/><text x="766" y="44">lease lifetime</text>
</svg>`;

/** A self-contained page: the transcript and one picture per run. */
export function renderHtml(title: string, runs: readonly { model: TimelineModel; transcript: readonly string[] }[]): string {
  const body: string[] = [];
  for (const r of runs) {
    const m = r.model;
    body.push(`<section class="run"${m.variant !== undefined ? ` data-variant="${esc(m.variant)}"` : ''}>`);
    body.push(`<h2>${m.variant !== undefined ? `variant ${esc(m.variant)}` : 'run'}${m.settings.length > 0 ? ` <small>(${esc(m.settings.join(', '))})</small>` : ''}</h2>`);
    if (m.failure !== undefined) body.push(`<p class="failure">${label(m.failure)}</p>`);
    body.push(renderSvg(m));
    body.push(`<details><summary>transcript</summary><pre class="transcript">${label(r.transcript.join('\n'))}</pre></details>`);
    body.push('</section>');
  }
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${esc(title)}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
.failure { color: #b00; font-weight: bold; }
pre.transcript { background: #f7f7f7; padding: 0.8em; font-size: 12px; }
svg.timeline { border: 1px solid #ddd; background: #fff; }
</style>
<script>
// Not needed to draw the page: it only records, for checks in a headless browser, that the SVG was parsed
// and laid out (data-rendered, data-writes, data-svg-width) and whether any script error happened (data-errors).
window.addEventListener('error', function () { var d = document.documentElement.dataset; d.errors = String(Number(d.errors || 0) + 1); });
document.addEventListener('DOMContentLoaded', function () {
  var d = document.documentElement.dataset;
  var svg = document.querySelector('svg.timeline');
  d.writes = String(document.querySelectorAll('svg.timeline .write').length);
  d.svgWidth = String(svg ? Math.round(svg.getBoundingClientRect().width) : 0);
  d.rendered = 'yes';
});
</script>
</head>
<body>
<h1>${esc(title)}</h1>
<p>Revisions run left to right. Each key has a lane; each watcher and lease has one below. Hover a mark for details.</p>
${LEGEND}
${body.join('\n')}
</body>
</html>
`;
}
