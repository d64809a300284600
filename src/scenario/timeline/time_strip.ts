/**
 * The time strip, under the revision lanes: what happens on etcd's own clock placed by virtual time — watch
 * opens and cancels, lease grants, keep-alives, a TTL running out and the lessor's 500 ms expiry checks around
 * it, compactions and restores, a cluster's members.
 */
import { COLORS, esc, label, LEFT, lineRef, restoreLook, showMs, stepCircle, stepPlaces } from './look.js';
import { drawMemberRow } from './members.js';
import { timelineSteps, type TimelineLease, type TimelineModel, type TimelineRestore, type TimelineWatcher } from './model.js';
/** Height of the strip's axis above its first row, and of each row. */
export const STRIP_TOP = 56;
export const STRIP_ROW = 22;
/** etcd's lessor checks for expired leases every 500 ms (lessor.go revokeExpiredLeases). */
export const EXPIRY_CHECK_MS = 500;

/** One row of the time strip: a watcher's streams, a lease's life, or the compactions and restores. */
export type StripRow = { readonly kind: 'watch'; readonly w: TimelineWatcher } | { readonly kind: 'lease'; readonly l: TimelineLease } | { readonly kind: 'store' } | { readonly kind: 'member'; readonly name: string };

/** The restores the store row draws: on a cluster a snapshot installed on a follower is on that member's row instead. */
export function storeRestores(m: TimelineModel): TimelineRestore[] {
  return m.restores.filter((r) => r.kind !== 'snapshot-install');
}

/** The strip's rows; none when time never moved (then every mark would sit at t=0 and say nothing). */
export function timeStripRows(m: TimelineModel): StripRow[] {
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
export function leaseDeadline(l: TimelineLease): number {
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
export function drawTimeStrip(m: TimelineModel, rows: readonly StripRow[], top: number, tw: number, laneLabel: (cy: number, text: string, fill?: string) => string): string {
  const end = Math.max(m.endMs, 1);
  const t0 = LEFT + 10;
  const tx = (ms: number): number => t0 + (Math.max(0, Math.min(ms, end)) / end) * tw;
  const out: string[] = [`<g class="time-strip" data-end-ms="${m.endMs}">`];
  const axisY = top + 38;
  out.push(`<line x1="${LEFT}" y1="${top + 4}" x2="${t0 + tw + 20}" y2="${top + 4}" stroke="#bbb"/>`);
  out.push(`<text x="${LEFT - 8}" y="${axisY - 4}" text-anchor="end" fill="#555">virtual time →</text>`);
  // Tick labels at a round step: about eight of them across the strip.
  const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000, 3_600_000];
  const every = steps.find((st) => end / st <= 8) ?? end;
  const bottom = top + STRIP_TOP + rows.length * STRIP_ROW;
  for (let t = 0; t <= end + 1e-9; t += every) {
    out.push(`<line class="time-tick" x1="${tx(t)}" y1="${axisY}" x2="${tx(t)}" y2="${bottom}" stroke="#f0f0f0"/><text x="${tx(t)}" y="${axisY - 4}" text-anchor="middle" fill="#777" font-size="10">${showMs(t)}</text>`);
  }
  // The script's steps at the moment they were reached, as on the revision axis (several at one moment side by side).
  const timed = timelineSteps(m).steps.filter((st) => st.atMs !== undefined);
  const at = stepPlaces(timed.map((st) => tx(st.atMs!)));
  timed.forEach((st, i) => {
    out.push(
      `<g class="time-step" data-step="${st.n}" data-ms="${st.atMs!}" data-line="${st.line}">${stepCircle(at[i]!, tx(st.atMs!), top + 14, st.n)}<title>step ${st.n} (line ${st.line}, at t=${showMs(st.atMs!)})</title></g>`,
    );
  });
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
