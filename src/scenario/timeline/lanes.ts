/**
 * The lanes under the revision axis: a key's writes (its life from put to delete, a delete by lease expiry
 * distinct), the reads at the revision they read, each lease from grant to expiry or revoke, and a cluster's
 * members by revision.
 */
import { elidedBar } from './axis.js';
import type { Canvas } from './draw.js';
import { COLORS, esc, label, LANE, LEFT, lineRef, showMs, spread } from './look.js';
import { drawMemberRow } from './members.js';
import { timelineKeys, type TimelineRead } from './model.js';

/** One lane per key, in byte order: each write a mark, deletes distinct; returns the y below them. */
export function drawKeyLanes(c: Canvas, top: number): number {
  const { m, axis, out, maxRev, laneLabel } = c;
  const { x } = axis;
  let y = top;
  const keys = timelineKeys(m);
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
  return y;
}

/** Characters a read's label may take: longer key lists end in `…` with their count. */
const READ_LABEL_MAX = 64;

/** What a read returned, as its label says it on the page: the keys (`, more`), `no keys`, or its error. */
export function readLabel(r: TimelineRead): string {
  if (r.error !== undefined) return `${r.pinned ? `--rev=${r.rev}` : 'newest'}: ${r.error.replace(/^etcdserver: (mvcc: )?/, '')}`;
  const keys = r.keys.length === 0 ? 'no keys' : r.keys.join(' ');
  const text = `${keys}${r.more ? ', more' : ''}`;
  return text.length <= READ_LABEL_MAX ? text : `${text.slice(0, READ_LABEL_MAX - 12)}… (${r.keys.length} keys${r.more ? ', more' : ''})`;
}

/** How far right a read's label reaches (monospace 11 px: about 6.7 px a character). */
export function readLabelEnd(c: Pick<Canvas, 'axis'>, r: TimelineRead): number {
  return c.axis.x(r.rev) + 12 + label(readLabel(r)).length * 6.7;
}

/**
 * Reads: one row each, at the revision it read (a pinned --rev read filled, a read of the newest revision
 * hollow, a failed one a red cross), with what it returned written beside it: the pages of a pagination lesson
 * are on the page, not only in a hover title.
 */
export function drawReadsLane(c: Canvas, top: number): number {
  const { m, axis, out, laneLabel } = c;
  const { x } = axis;
  let y = top;
  if (m.reads.length === 0) return y;
  y += 6;
  out.push('<g class="reads-lane">');
  m.reads.forEach((r, i) => {
    const cy = y + LANE / 2;
    out.push(laneLabel(cy, `get, line ${r.line}`, COLORS.read));
    const rx = x(r.rev);
    const what = r.error !== undefined ? `failed: ${r.error}` : `${r.keys.length === 0 ? 'no keys' : r.keys.join(', ')}${r.more ? ', more' : ''}`;
    const tip = `line ${r.line}: ${r.command} read at revision ${r.rev}${r.pinned ? ' (pinned --rev)' : ' (newest)'}: ${what}`;
    const mark =
      r.error !== undefined
        ? `<path class="read failed" data-read="${i}" data-rev="${r.rev}" data-line="${r.line}" d="M${rx - 5},${cy - 5}L${rx + 5},${cy + 5}M${rx - 5},${cy + 5}L${rx + 5},${cy - 5}" stroke="${COLORS.del}" stroke-width="2.5"><title>${label(tip)}</title></path>`
        : `<path class="read${r.pinned ? ' pinned' : ''}" data-read="${i}" data-rev="${r.rev}" data-line="${r.line}" d="M${rx},${cy - 6}l5,6l-5,6l-5,-6z" fill="${r.pinned ? COLORS.read : '#fff'}" stroke="${COLORS.read}" stroke-width="1.5"><title>${label(tip)}</title></path>`;
    out.push(`<line x1="${LEFT}" y1="${cy}" x2="${rx}" y2="${cy}" stroke="#eee"/>`, mark);
    out.push(`<text class="read-label" data-read="${i}" data-line="${r.line}" x="${rx + 9}" y="${cy + 4}" fill="${r.error !== undefined ? COLORS.del : COLORS.read}">${label(readLabel(r))}<title>${label(tip)}</title></text>`);
    y += LANE;
  });
  out.push('</g>');
  return y;
}

/** One lane per lease: a bar from grant to expiry or revoke, its keep-alives. */
export function drawLeaseLanes(c: Canvas, top: number): number {
  const { m, axis, out, maxRev, laneLabel } = c;
  const { x, step } = axis;
  let y = top;
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
  return y;
}

/** A cluster's members on the revision axis: the same stretches and levers, at the revision they happened. */
export function drawMemberLanes(c: Canvas, top: number): void {
  const { m, axis, out, maxRev, laneLabel } = c;
  const { x } = axis;
  let y = top;
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
}
