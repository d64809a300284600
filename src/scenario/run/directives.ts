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
import { kvCommandLine } from './echo.js';
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
          v = `${str(lastKv.key)}\0`;
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
      const outputs = new Set<string>();
      const first = s.sim.mvcc.currentRevision;
      // Watch events caused by the puts print while the loop runs; the command line that caused them goes
      // before them (spliced in at this point once the loop is done), as in a terminal.
      const at = s.transcript.length;
      let cmd = '';
      for (let i = 1; i <= n; i++) {
        s.vars.set('i', String(i));
        runCommand(ctx, d.body, true);
        if (i === 1) cmd = kvCommandLine(s.vars, d.body);
        outputs.add(s.last.output.join('\n'));
        s.sim.server.flush();
      }
      const lastRev = s.sim.mvcc.currentRevision;
      const head = [`$ etcdctl ${d.raw.replace(/^repeat\s+\S+\s+/, '')}   # repeated ${n} times (i=1..${n}; first: ${cmd})${lastRev !== first ? `, revisions ${first + 1}..${lastRev}` : ''}`];
      for (const o of outputs) head.push(outputs.size === 1 ? `${o}   (×${n})` : o);
      s.insert(at, head);
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
