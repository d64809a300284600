/**
 * How a scenario's etcdctl prints `endpoint status` (etcdctl 3.4.23's printer): DB SIZE through
 * go-humanize, and the `-w table` layout of tablewriter. Apart from cluster.ts, which gathers the rows:
 * printing is etcdctl's idea, not the cluster run's.
 */
/** go-humanize's Bytes, as etcdctl prints DB SIZE: SI units, one decimal below 10. */
export function humanBytes(n: number): string {
  if (n < 10) return `${n} B`;
  const units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB'];
  const e = Math.floor(Math.log(n) / Math.log(1000));
  const val = Math.floor((n / 1000 ** e) * 10 + 0.5) / 10;
  return `${val < 10 ? val.toFixed(1) : val.toFixed(0)} ${units[e]}`;
}

const STATUS_HEADER = ['ENDPOINT', 'ID', 'VERSION', 'DB SIZE', 'IS LEADER', 'IS LEARNER', 'RAFT TERM', 'RAFT INDEX', 'RAFT APPLIED INDEX', 'ERRORS'];

/** etcdctl's `-w table` (tablewriter: centered header, right-aligned cells, as 3.4.23 prints them). */
export function statusTable(rows: readonly string[][]): string[] {
  const widths = STATUS_HEADER.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const rule = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+`;
  const center = (t: string, w: number): string => {
    const left = Math.floor((w - t.length) / 2);
    return ' '.repeat(left) + t + ' '.repeat(w - t.length - left);
  };
  const head = `|${STATUS_HEADER.map((h, i) => ` ${center(h, widths[i]!)} `).join('|')}|`;
  const body = rows.map((r) => `|${r.map((c, i) => ` ${c.padStart(widths[i]!)} `).join('|')}|`);
  return [rule, head, rule, ...body, rule];
}
