/**
 * Runs an etcdctl command against the member's services, in etcd's message form (the path every front
 * door takes), and writes what etcdctl 3.4 prints for it: put, get (`read at N`, `more` when a limit cut
 * it), del, txn, compact (marked on the timeline), watch (run/watches.ts) and lease (run/leases.ts).
 */
import { delJson, delSimple, getJson, getSimple, putJson, putSimple, str, txnSimple } from '../format.js';
import type { EtcdCommand } from '../parse/commands.js';
import { procfileClientPort } from '../parse/cluster_directives.js';
import { alarmText, alarmTypeNumber } from '../../server/index.js';
import type * as M from '../../server/messages.js';
import { callService } from './calls.js';
import type { RunContext } from './context.js';
import { echo, echoTxn, kvCommandLine, putStdin } from './echo.js';
import { deleteRangeRequest, putRequest, rangeRequest, txnRequest } from './requests.js';

/** Runs `c`; `quiet` (for `repeat`) records the response without echoing it. */
export function runCommand(ctx: RunContext, c: EtcdCommand, quiet = false): void {
  const s = ctx.state;
  const kv = s.sim.services.kv;
  switch (c.kind) {
    case 'put': {
      const req = putRequest(s.vars, c);
      callService(s, 'put', () => kv.put(req, s.ctx()), (r) => (c.json ? [putJson(r)] : putSimple(r)));
      if (!quiet) echo(s, kvCommandLine(s.vars, c), undefined, putStdin(c));
      return;
    }
    case 'get': {
      const req = rangeRequest(s.vars, c);
      const r = callService(s, 'get', () => kv.range(req, s.ctx()), (r) => (c.json ? [getJson(r)] : getSimple(r, c.printValueOnly)));
      if (r !== undefined) s.last.range = r;
      // Each get is drawn at the revision it read (a `repeat` of gets is one step: not drawn).
      if (r !== undefined && !quiet) {
        const pinned = req.revision !== undefined && req.revision !== 0;
        s.timeline.reads.push({ line: s.line, rev: pinned ? Number(req.revision) : Number(r.header.revision), pinned, command: kvCommandLine(s.vars, c), keys: r.kvs.map((kv) => str(kv.key)), more: r.more });
      }
      // A read etcd refused (a compacted or future revision) is drawn too, failed, at the revision it asked for.
      if (r === undefined && !quiet && s.last.error !== undefined) {
        const pinned = req.revision !== undefined && req.revision !== 0;
        const rev = pinned ? Math.min(Number(req.revision), s.sim.mvcc.currentRevision + 1) : s.sim.mvcc.currentRevision;
        s.timeline.reads.push({ line: s.line, rev, pinned, command: kvCommandLine(s.vars, c), keys: [], more: false, error: s.last.error });
      }
      const readAt = req.revision !== undefined && req.revision !== 0 ? `read at ${String(req.revision)}` : undefined;
      if (!quiet) echo(s, kvCommandLine(s.vars, c), r !== undefined && r.more ? [readAt, 'more'].filter((x) => x !== undefined).join(', ') : readAt);
      return;
    }
    case 'del': {
      const req = deleteRangeRequest(s.vars, c);
      callService(s, 'del', () => kv.deleteRange(req, s.ctx()), (r) => (c.json ? [delJson(r)] : delSimple(r)));
      if (!quiet) echo(s, kvCommandLine(s.vars, c));
      return;
    }
    case 'txn': {
      const req = txnRequest(s.vars, c);
      callService(s, 'txn', () => kv.txn(req, s.ctx()), txnSimple);
      echoTxn(s, c);
      return;
    }
    case 'compact': {
      const rev = s.vars.int(c.rev, 'compact');
      callService(s, 'compact', () => kv.compact({ revision: rev, physical: c.physical }, s.ctx()), () => [`compacted revision ${rev}`]);
      if (s.last.error === undefined) s.timeline.compactions.push({ rev, line: s.line, atMs: s.sim.clock.now() });
      echo(s, `compact ${rev}${c.physical ? ' --physical' : ''}`);
      return;
    }
    case 'watch':
      ctx.watches.open(c);
      return;
    case 'lease-grant':
      ctx.leases.grant(c.ttl);
      return;
    case 'lease-keep-alive':
      ctx.leases.keepAliveOnce(c.id);
      return;
    case 'lease-revoke':
      ctx.leases.revoke(c.id);
      return;
    case 'lease-timetolive':
      ctx.leases.timeToLive(c.id, c.keys);
      return;
    case 'endpoint-status':
      // The parser admits it only on a cluster.
      ctx.cluster!.endpointStatus(s, c.table, c.cluster);
      return;
    case 'defrag': {
      const m = s.sim.server.services.maintenance; // one member: the parser refuses these on a cluster
      callService(s, 'defrag', () => m.defragment({}, s.ctx()), () => [`Finished defragmenting etcd member[127.0.0.1:${procfileClientPort(0)}]`]);
      echo(s, 'defrag');
      return;
    }
    case 'alarm-list':
    case 'alarm-disarm': {
      const m = s.sim.server.services.maintenance; // one member: the parser refuses these on a cluster
      // etcdctl 3.4 prints each alarm as gogo's text form; disarm lists them, then takes each off (clientv3's AlarmDisarm).
      const text = (a: M.AlarmMember): string => alarmText({ memberId: BigInt(a.memberID), type: alarmTypeNumber(a.alarm) }, '3.4');
      callService(
        s,
        c.kind === 'alarm-list' ? 'alarm list' : 'alarm disarm',
        () => {
          const listed = m.alarm({ action: 'GET' }, s.ctx());
          if (c.kind === 'alarm-list') return listed;
          const off = listed.alarms.flatMap((a) => m.alarm({ action: 'DEACTIVATE', memberID: a.memberID, alarm: a.alarm }, s.ctx()).alarms);
          return { ...listed, alarms: off };
        },
        (r) => r.alarms.map(text),
      );
      echo(s, c.kind === 'alarm-list' ? 'alarm list' : 'alarm disarm');
      return;
    }
  }
}
