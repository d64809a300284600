/**
 * Leases in a scenario: `etcdctl lease grant`, `keep-alive --once` (clientv3's KeepAliveOnce: one
 * request on a LeaseKeepAlive stream; TTL 0 in the answer means the lease is gone), `revoke` and
 * `timetolive`, and the lessor's own expiry of a lease, noted in the transcript when it happens. Each
 * lease is also a lane of the timeline, from grant to expiry or revoke.
 */
import { keepAliveLine, leaseGrantLine, leaseHex, showTime, timeToLiveLine } from '../format.js';
import type { Word } from '../parse/lexer.js';
import type { TimelineLease } from '../timeline/index.js';
import { callService } from './calls.js';
import { echo } from './echo.js';
import { leaseId } from './requests.js';
import { markLeaseDeletes } from './writes.js';
import type { RunState } from './state.js';

/** etcdctl's --command-timeout (5 s): how long a command waits for its answer. */
export const ETCDCTL_COMMAND_TIMEOUT_MS = 5000;

/** The run's leases, by ID in hex as etcdctl prints it. */
export class ScenarioLeases {
  /** The last lease granted (for `NAME = lease`). */
  lastGranted: string | undefined;
  private readonly byHex = new Map<string, TimelineLease>();

  constructor(private readonly s: RunState) {
    s.engine.onLeaseRevoked((ev) => {
      if (ev.reason !== 'expire') return;
      const hex = leaseHex(ev.id);
      const l = this.byHex.get(hex);
      if (l !== undefined) l.end = { kind: 'expired', atRev: ev.revision, atMs: ev.at, line: s.line };
      if (ev.deleted > 0) markLeaseDeletes(s, ev.revision, `lease expiry (${hex})`);
      s.out(`# t=${showTime(ev.at)}: lease ${hex} expired; the lessor revoked it${ev.deleted > 0 ? `, deleting ${ev.deleted} key${ev.deleted === 1 ? '' : 's'} at revision ${ev.revision}` : ' (no keys attached)'}`);
    });
  }

  /** `lease grant TTL`. */
  grant(ttlWord: Word): void {
    const s = this.s;
    const ttl = s.vars.int(ttlWord, 'lease grant');
    const r = callService(s, 'lease grant', () => s.sim.services.lease.leaseGrant({ TTL: ttl }, s.ctx()), (r) => [leaseGrantLine(r)], (d) => `Error: failed to grant lease (${d})`);
    if (r !== undefined) {
      const hex = leaseHex(r.ID);
      this.lastGranted = hex;
      const l: TimelineLease = { id: hex, ttl: Number(r.TTL), grantedAtRev: s.sim.mvcc.currentRevision, grantedAtMs: s.sim.clock.now(), line: s.line, keepAlives: [], end: undefined };
      this.byHex.set(hex, l);
      s.timeline.leases.push(l);
    }
    echo(s, `lease grant ${ttl}`);
  }

  /** `lease keep-alive ID --once`. */
  keepAliveOnce(idWord: Word): void {
    const s = this.s;
    const id = leaseId(s.vars, idWord);
    const callObj = s.sim.services.lease.leaseKeepAlive(s.ctx());
    let endErr: string | undefined;
    callObj.onEnd((e) => {
      if (e !== undefined) endErr = e.details;
    });
    let ended = false;
    callObj.onEnd(() => {
      ended = true;
    });
    callObj.write({ ID: id });
    // On a cluster the renewal goes to the leader, which may take a while (none known yet): etcdctl waits up
    // to its command timeout.
    if (callObj.pending === 0 && !ended && s.engine.currentEndpoint() !== undefined) {
      s.beginWait();
      // No answer within etcdctl's command timeout: its context ends the call.
      if (!s.engine.waitUntil(() => callObj.pending > 0 || ended, ETCDCTL_COMMAND_TIMEOUT_MS)) endErr = 'context deadline exceeded';
    }
    const rs = callObj.take();
    callObj.end();
    const r = rs[0];
    if (r === undefined || r.TTL === '0') {
      // clientv3's KeepAliveOnce turns TTL 0 into ErrLeaseNotFound.
      const d = endErr !== undefined && endErr !== '' ? endErr : 'etcdserver: requested lease not found';
      s.last = { revision: undefined, error: d, output: [`Error: ${d}`], range: undefined, what: 'lease keep-alive' };
    } else {
      s.last = { revision: Number(r.header.revision), error: undefined, output: [keepAliveLine(r)], range: undefined, what: 'lease keep-alive' };
      this.byHex.get(leaseHex(id))?.keepAlives.push({ atRev: s.sim.mvcc.currentRevision, atMs: s.sim.clock.now(), line: s.line });
    }
    echo(s, `lease keep-alive ${leaseHex(id)} --once`);
  }

  /** `lease revoke ID`. */
  revoke(idWord: Word): void {
    const s = this.s;
    const id = leaseId(s.vars, idWord);
    const before = s.sim.mvcc.currentRevision;
    const r = callService(s, 'lease revoke', () => s.sim.services.lease.leaseRevoke({ ID: id }, s.ctx()), () => [`lease ${leaseHex(id)} revoked`], (d) => `Error: failed to revoke lease (${d})`);
    if (r !== undefined) {
      const l = this.byHex.get(leaseHex(id));
      if (l !== undefined) l.end = { kind: 'revoked', atRev: s.sim.mvcc.currentRevision, atMs: s.sim.clock.now(), line: s.line };
      if (s.sim.mvcc.currentRevision > before) markLeaseDeletes(s, s.sim.mvcc.currentRevision, `lease revoke (${leaseHex(id)})`);
    }
    echo(s, `lease revoke ${leaseHex(id)}`);
  }

  /** `lease timetolive ID [--keys]`. */
  timeToLive(idWord: Word, keys: boolean): void {
    const s = this.s;
    const id = leaseId(s.vars, idWord);
    callService(s, 'lease timetolive', () => s.sim.services.lease.leaseTimeToLive({ ID: id, keys }, s.ctx()), (r) => [timeToLiveLine(r, keys)]);
    echo(s, `lease timetolive ${leaseHex(id)}${keys ? ' --keys' : ''}`);
  }
}
