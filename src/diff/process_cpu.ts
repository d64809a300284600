/**
 * The CPU time a member process has used, for the start-up comparisons of `etcdsim etcd` with etcd 3.4.23
 * (the processes bench, the e2e test's printed figures). On a machine whose cores are shared, a process's CPU
 * becomes wall time in proportion to the load, so CPU to ready is the figure of a start that the load does
 * not move. Every thread counts: Go runs etcd on several, Node its GC and compiler beside the main one.
 * Linux's /proc only; elsewhere there is no figure.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** ms of CPU process `pid` has run so far (its live threads' schedstat), or undefined where /proc does not say. */
export function processCpuMs(pid: number): number | undefined {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  let ns = 0;
  for (const task of tasks) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // a thread that ended meanwhile (its time is lost with it: a few threads of a start, rarely)
    }
  }
  return ns / 1e6;
}
