/**
 * Runs the simulator's directives: notes, `advance` (virtual time moves; etcd's loops — watch sync,
 * victim retry, lease expiry, progress notifications — run as they come due), captures into shell
 * variables, `repeat`, the watch directives (run/watches.ts) and snapshot / restore (run/snapshots.ts).
 */
import { hasNul, NOT_PASTEABLE, shellQuote, str } from '../format.js';
import type { Directive } from '../parse/directives.js';
import { RunError } from '../run_error.js';
import { runCommand } from './commands.js';
import type { RunContext } from './context.js';
import { kvCommandLine, putStdin } from './echo.js';
import { runMemberDirective } from './restart.js';

/** Runs `d`. */
export function runDirective(ctx: RunContext, d: Directive): void {
  const s = ctx.state;
  switch (d.kind) {
    case 'note':
      s.out(`## ${d.text}`.trimEnd());
      s.timeline.notes.push({ line: s.line, text: d.text, rev: s.sim.mvcc.currentRevision, atMs: s.sim.clock.now() });
      return;
    case 'advance':
      s.advance(d.ms, d.raw);
      return;
    case 'capture': {
      let v: string;
      switch (d.what) {
        case 'revision':
          if (s.last.revision === undefined) throw new RunError('error', `${d.name} = revision: the last response (${s.last.what}) has no revision${s.last.error !== undefined ? ` (it failed: ${s.last.error})` : ''}`);
          v = String(s.last.revision);
          break;
        case 'lease':
          if (ctx.leases.lastGranted === undefined) throw new RunError('error', `${d.name} = lease: no lease was granted yet`);
          v = ctx.leases.lastGranted;
          break;
        case 'next_key': {
          const kvs = s.last.range?.kvs ?? [];
          const lastKv = kvs[kvs.length - 1];
          if (lastKv === undefined) throw new RunError('error', `${d.name} = next_key: the last response is not a get with keys`);
          // clientv3 starts the next page at the last key + "\x00"; etcdctl cannot send that (argv cannot hold a
          // NUL byte, bash drops it). No key etcdctl wrote holds a NUL byte either, so the smallest key above the
          // last one that can exist is the last key + "\x01", which a shell passes as $'...\x01': the same page.
          v = `${str(lastKv.key)}\x01`;
          break;
        }
        case 'expr':
          v = s.vars.expand(d.expr!);
          break;
      }
      s.vars.set(d.name, v);
      const shown = shellQuote(v);
      s.out(`# ${d.name} = ${d.what === 'expr' ? d.expr!.raw : d.what} → ${shown}${hasNul(shown) ? ` (${NOT_PASTEABLE})` : ''}`);
      return;
    }
    case 'repeat': {
      const n = s.vars.int(d.count, 'repeat');
      if (n < 1 || n > 100_000) throw new RunError('error', `repeat: count must be 1..100000, got ${n}`);
      const printed: string[] = [];
      let failed = false;
      const first = s.sim.mvcc.currentRevision;
      // Watch events caused by the puts print while the loop runs; the command line that caused them goes
      // before them (spliced in at this point once the loop is done), as in a terminal.
      const at = s.transcript.length;
      for (let i = 1; i <= n; i++) {
        s.vars.set('i', String(i));
        runCommand(ctx, d.body, true);
        printed.push(...s.last.output);
        if (s.last.error !== undefined) failed = true;
        s.sim.server.flush();
      }
      const lastRev = s.sim.mvcc.currentRevision;
      // A shell loop a learner can paste, its output counted by `uniq -c` (what it prints, line for line; a
      // refused command's lines are etcdctl's stderr, so then that goes through the count too).
      const stdin = putStdin(d.body);
      const loop = `$ for i in $(seq 1 ${n}); do ${stdin !== undefined ? `${stdin} | ` : ''}etcdctl ${s.engine.endpointFlag()}${loopBody(s, d.body)}; done${failed ? ' 2>&1' : ''} | uniq -c${lastRev !== first ? `   # revisions ${first + 1}..${lastRev}` : ''}`;
      s.insert(at, [loop, ...uniqCount(printed)]);
      return;
    }
    case 'cancel':
    case 'break':
    case 'slow':
    case 'drain':
    case 'progress':
      // Each watch directive is the ScenarioWatches method of the same name.
      ctx.watches[d.kind](d.name);
      return;
    case 'resume':
      ctx.watches.resume(d.name, d.rev);
      return;
    case 'snapshot':
      ctx.snapshots.take(d.name);
      return;
    case 'restore':
      ctx.snapshots.restore(d.name);
      return;
    case 'restart':
    case 'crash-during-compact':
      runMemberDirective(ctx, d);
      return;
  }
}

/** `uniq -c`'s output: each run of equal lines once, after its count right-aligned in 7 columns (GNU coreutils). */
function uniqCount(lines: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < lines.length; ) {
    let j = i;
    while (j < lines.length && lines[j] === lines[i]) j++;
    out.push(`${String(j - i).padStart(7)} ${lines[i]!}`);
    i = j;
  }
  return out;
}

/** A repeated command as the loop's body: every variable expanded but the loop's own `${i}`. */
function loopBody(s: RunContext['state'], body: Parameters<typeof kvCommandLine>[1]): string {
  const mark = 'EtcdsimLoopIndex';
  s.vars.set('i', mark);
  const line = kvCommandLine(s.vars, body);
  // Outside quotes the variable goes in as it is; inside single quotes it needs them closed around it.
  let quoted = false;
  let out = '';
  for (let k = 0; k < line.length; k++) {
    if (line.startsWith(mark, k)) {
      out += quoted ? `'"\${i}"'` : '"${i}"';
      k += mark.length - 1;
      continue;
    }
    if (line[k] === "'") quoted = !quoted;
    out += line[k];
  }
  return out;
}
