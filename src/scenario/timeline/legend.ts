/**
 * The page's legend: one small picture per kind of mark, what it means in etcd's terms.
 */
import { COLORS } from './look.js';
/** One legend entry: a small picture and what it means. */
export function legendItem(key: string, icon: string, text: string): string {
  return `<li data-legend="${key}"><svg xmlns="http://www.w3.org/2000/svg" width="34" height="20" viewBox="0 0 34 20" aria-hidden="true">${icon}</svg>${text}</li>`;
}

export const LEGEND = [
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
  legendItem('step', `<circle cx="17" cy="10" r="7" fill="#fff" stroke="${COLORS.step}"/><text x="17" y="13.5" text-anchor="middle" font-size="10" font-family="monospace">1</text>`, 'step of the script (list beside)'),
  legendItem('time-strip', `<path d="M4,4L10,10L4,16Z" fill="${COLORS.watch}"/><rect x="18" y="5" width="10" height="10" fill="#fff" stroke="${COLORS.del}" stroke-width="2"/>`, 'time strip (below): a watch opened | canceled, by virtual time'),
  legendItem('expiry-check', `<line x1="9" y1="3" x2="9" y2="17" stroke="#999" stroke-width="2"/><line x1="17" y1="3" x2="17" y2="17" stroke="${COLORS.lease}" stroke-dasharray="2 2" stroke-width="1.5"/><line x1="25" y1="3" x2="25" y2="17" stroke="#333" stroke-width="2"/>`, 'expiry check (lease alive) | TTL runs out | check that revokes'),
  legendItem('linked', `<circle cx="17" cy="10" r="5" fill="${COLORS.put}" stroke="#f0a000" stroke-width="3"/>`, 'hover or click a mark or a transcript line: the other lights up'),
  legendItem('break', `<rect x="7" y="1" width="20" height="18" fill="#f4f4f4"/><path d="M12,10l4,-6l2,12l4,-6" stroke="#555" fill="none"/>`, 'elided revisions (count below; ×N marks inside)'),
].join('\n');

/** Legend entries of a cluster run's member rows (shown when a page has a cluster run). */
export const CLUSTER_LEGEND = [
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
export const RESTART_LEGEND = legendItem(
  'member-restart',
  `<line x1="8" y1="1" x2="8" y2="19" stroke="${COLORS.crash}" stroke-dasharray="2 2" stroke-width="2"/><path d="M16,6L22,12M16,12L22,6" stroke="${COLORS.crash}" stroke-width="2.5"/><path d="M24,3L30,9L24,15Z" fill="${COLORS.crash}"/>`,
  'killed and restarted (mid-compaction: #19179), its index rebuilt from the backend: on the axis | on the time strip',
);
