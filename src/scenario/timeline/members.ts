/**
 * A simulated cluster's members in the picture: from the member events (levers the script pulled, Raft's
 * answers: an election at a term, a step-down, a snapshot sent) the stretches of each member's life (leading,
 * down, paused, cut off, applying late, etcdctl's link impaired) and one row per member drawing them, by virtual
 * time on the time strip or by revision under the lanes.
 */
import { COLORS, esc, label, lineRef, showMs } from './look.js';
import type { TimelineModel } from './model.js';
/** Where a member row places things: by virtual time (the time strip) or by revision (a lane of the revision axis). */
export type MemberAxis = { readonly kind: 'time' | 'rev'; readonly x: (v: number) => number; readonly end: number };

/** A stretch of one member's life on the time strip: leading, down, stopped, cut off, slow, or its link to etcdctl impaired. */
export interface MemberSpan {
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
export const SPAN_LOOK: Readonly<Record<MemberSpan['kind'], { dy: number; h: number; fill: string; opacity: number; outline?: boolean }>> = {
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
export function drawMemberRow(m: TimelineModel, name: string, cy: number, axis: MemberAxis): string {
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
      `<g class="member-span span-${sp.kind}" data-member="${esc(name)}" data-from-ms="${sp.from}" data-line="${sp.line}">${shape}${room ? `<text x="${x1 + (sp.kind === 'leader' ? 12 : 3)}" y="${cy + 3.5}" font-size="10" fill="${sp.kind === 'leader' ? '#7a5a00' : '#fff'}">${text}</text>` : ''}<title>${label(tip)}</title></g>`,
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
