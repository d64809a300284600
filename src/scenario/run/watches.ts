/**
 * A scenario's named watches, each an `etcdctl watch ... &` running in the background on its own Watch
 * stream: opening one (at a start revision: etcd replays history from it, inclusive), printing its
 * responses as etcdctl does (events, progress notifications, a cancelation with its compact_revision and
 * etcdctl exiting), and what a client or its network does to it: cancel (Ctrl-C), break (the stream is
 * cut), resume at a revision on a new stream, slow (stop reading: etcd's send window and channel fill)
 * and drain, and a progress request. Each watch is also a lane of the timeline.
 */
import type { WatchCall } from '../../server/index.js';
import type * as M from '../../server/messages.js';
import { str, watchEventLines } from '../format.js';
import type { WatchCmd } from '../parse/commands.js';
import type { Word } from '../parse/lexer.js';
import { RunError } from '../run_error.js';
import type { TimelineWatcher, TimelineWatchSegment } from '../timeline/index.js';
import { watchArgs } from './echo.js';
import { watchCreateRequest } from './requests.js';
import type { RunState } from './state.js';

/** An event a watch received. */
export interface ReceivedEvent {
  readonly type: 'PUT' | 'DELETE';
  readonly key: string;
  readonly rev: number;
}

/** The transcript's note on a watch that asked for fragments, which etcdctl cannot ask for. */
function fragmentNote(w: WatchState): string {
  return w.create.fragment === true ? ' (fragment: true, as clientv3.WithFragment() asks; etcdctl has no flag for it)' : '';
}

/** A named watch: its request, its current stream, and what it has received so far. */
export interface WatchState {
  readonly name: string;
  /** On a cluster, the member it watches (its `--endpoints`). */
  readonly endpoint: number | undefined;
  readonly create: M.WatchCreateRequest;
  /** Its arguments as typed after `etcdctl watch`. */
  readonly display: string;
  call: WatchCall | undefined;
  state: 'open' | 'canceled' | 'broken' | 'closed';
  compactRevision: number;
  slow: boolean;
  readonly events: ReceivedEvent[];
  readonly progress: number[];
  readonly lane: TimelineWatcher;
  segment: TimelineWatchSegment | undefined;
  /** When the current stream opened, and whether it started behind the head (its history comes from the sync step). */
  openedAtMs: number;
  behind: boolean;
  /** The interactive session (`--stream=S`) whose stream this watch shares, if any. */
  readonly stream: string | undefined;
  /** Its watch ID on a shared stream, once the server has answered the create. */
  watchId: string | undefined;
  /** Responses that carried events (each fragment counts), over all its streams. */
  responses: number;
  /** Events of fragments received so far, held as clientv3 holds them until the last fragment of the response. */
  readonly fragments: M.Event[];
  /** For each held event, the response (its number in `responses`) that carried it. */
  readonly fragmentOf: Map<M.Event, number>;
}

/** An interactive `etcdctl watch -i` session: one Watch stream, several watches on it, told apart by watch ID. */
interface SharedStream {
  readonly name: string;
  /** On a cluster, the member the session talks to. */
  readonly endpoint: number | undefined;
  readonly call: WatchCall;
  readonly byId: Map<string, WatchState>;
  /** Watches whose create the server has not answered yet, in the order they were sent. */
  readonly pending: WatchState[];
  open: boolean;
}

/** The run's watches by name. */
export class ScenarioWatches {
  private readonly byName = new Map<string, WatchState>();
  private readonly streams = new Map<string, SharedStream>();

  constructor(private readonly s: RunState) {}

  /** `watch NAME KEY ...`: a new watch, opened at `--rev` (0: from now). */
  open(c: WatchCmd): void {
    const s = this.s;
    if (this.byName.has(c.name)) throw new RunError('error', `a watch named ${c.name} already exists (use resume ${c.name} --rev=N, or another name)`);
    const create = watchCreateRequest(s.vars, c);
    const rev = c.rev === undefined ? 0 : s.vars.int(c.rev, '--rev');
    const display = watchArgs(s.vars, c);
    const lane: TimelineWatcher = { name: c.name, range: `${s.vars.expand(c.key)}${c.prefix ? '*' : ''}`, segments: [], events: [], progress: [], progressSeen: [], progressLines: [], cursor: 0 };
    const at = s.engine.currentEndpoint();
    if (at !== undefined) lane.member = s.timeline.members[at];
    s.timeline.watchers.push(lane);
    const w: WatchState = { name: c.name, endpoint: s.engine.currentEndpoint(), create, display, call: undefined, state: 'open', compactRevision: 0, slow: false, events: [], progress: [], lane, segment: undefined, openedAtMs: 0, behind: false, stream: c.stream, watchId: undefined, responses: 0, fragments: [], fragmentOf: new Map() };
    this.byName.set(c.name, w);
    if (c.stream !== undefined) this.openShared(w, rev, c.stream);
    else this.openStream(w, rev, 'watch');
  }

  /** The watch named `name`; stops the run when there is none. */
  get(name: string): WatchState {
    const w = this.byName.get(name);
    if (w === undefined) throw new RunError('error', `no watch named ${name} (open it first: watch ${name} KEY ...)`);
    return w;
  }

  /** `cancel NAME`: the client closes its watch (etcdctl's Ctrl-C). */
  cancel(name: string): void {
    const s = this.s;
    const w = this.get(name);
    if (w.state === 'open' && w.call !== undefined) {
      w.state = 'closed';
      if (w.segment !== undefined) w.segment.end = { kind: 'closed', atRev: Math.max(w.lane.cursor, s.sim.mvcc.currentRevision), compactRevision: 0, ...this.when() };
      // On a shared stream only this watch is canceled (a WatchCancelRequest); the others go on.
      if (w.stream !== undefined && w.watchId !== undefined) w.call.write({ cancel_request: { watch_id: w.watchId } });
      else w.call.cancel();
    }
    s.out(
      w.stream !== undefined && w.watchId !== undefined
        ? `# cancel ${name}: the client cancels this watch alone (a WatchCancelRequest for its ID, as clientv3 sends when the watch's context ends; etcdctl watch -i has no command for it) at rev ${s.sim.mvcc.currentRevision}`
        : `# cancel ${name}: the client closes its watch (Ctrl-C) at rev ${s.sim.mvcc.currentRevision}`,
    );
  }

  /** `break NAME`: the stream is cut (UNAVAILABLE); responses not yet delivered are lost with it. */
  break(name: string): void {
    const w = this.get(name);
    if (w.state !== 'open' || w.call === undefined) throw new RunError('error', `break ${name}: the watch is not open (${w.state})`);
    const lost = w.call.pending;
    w.call.abort();
    const shared = w.stream !== undefined ? this.streams.get(w.stream) : undefined;
    if (shared !== undefined && shared.call === w.call) {
      // The session's one stream is cut: every watch on it is broken with it.
      shared.open = false;
      for (const o of [...shared.byId.values(), ...shared.pending]) if (o !== w && o.call === w.call && o.state === 'open') this.markBroken(o);
    }
    w.state = 'broken';
    if (w.segment !== undefined) w.segment.end = { kind: 'broken', atRev: w.lane.cursor, compactRevision: 0, ...this.when() };
    const lastEv = w.events[w.events.length - 1];
    this.s.out(
      `# break ${name}: the Watch stream is cut (UNAVAILABLE)${lost > 0 ? `; ${lost} undelivered response${lost === 1 ? '' : 's'} lost with it` : ''}; last event received: ${lastEv === undefined ? 'none' : `${lastEv.type} ${lastEv.key} @${lastEv.rev}`}`,
    );
  }

  /** `resume NAME --rev=N`: the same watch on a new stream, from revision N. */
  resume(name: string, rev: Word): void {
    const w = this.get(name);
    if (w.state === 'open') throw new RunError('error', `resume ${name}: the watch is still open (break or cancel it first)`);
    // Reopened on the member it watched (etcdctl run again with the same --endpoints).
    this.s.engine.withEndpoint(w.endpoint, () => this.openStream(w, this.s.vars.int(rev, 'resume --rev'), 'resume'));
  }

  /**
   * The member restarted under a running `etcdctl watch`: clientv3 opens a new stream by itself and resumes
   * from `rev` (the revision after the last one it saw), printing nothing (run/restart.ts).
   */
  reconnect(name: string, rev: number): void {
    this.openStream(this.get(name), rev, 'reconnect');
  }

  /** `slow NAME`: the client stops reading its stream. */
  slow(name: string): void {
    const w = this.get(name);
    w.slow = true;
    w.call?.pause();
    const ws = this.s.sim.watchable;
    this.s.out(
      `# slow ${name}: the client stops reading its stream; the server's transport window (${ws.sendWindowBytes} B) fills, ` +
        `then its watch channel (${ws.chanBufLen} responses), then the watcher becomes a victim`,
    );
  }

  /** `drain NAME`: the client reads again. */
  drain(name: string): void {
    const w = this.get(name);
    w.slow = false;
    const call = w.call;
    const pending = call?.pending ?? 0;
    this.s.out(`# drain ${name}: the client reads again (${pending} response${pending === 1 ? '' : 's'} queued)`);
    call?.resume();
    this.s.flush();
  }

  /** `progress NAME`: the client sends a WatchProgressRequest on the watch's stream. */
  progress(name: string): void {
    const w = this.get(name);
    if (w.state !== 'open' || w.call === undefined) throw new RunError('error', `progress ${name}: the watch is not open (${w.state})`);
    this.s.out(`# progress ${name}: the client sends a WatchProgressRequest on ${w.stream !== undefined && w.watchId !== undefined ? `session ${w.stream}'s stream (it is for every watch on it)` : 'its stream'}`);
    w.call.write({ progress_request: {} });
  }

  /** Now, for the timeline: the virtual time and the script line running. */
  private when(): { atMs: number; line: number } {
    return { atMs: this.s.sim.clock.now(), line: this.s.line };
  }

  /** At the end of a run: no lane's cursor below 0. */
  settleCursors(): void {
    for (const w of this.byName.values()) w.lane.cursor = Math.max(w.lane.cursor, 0);
  }

  /** A watch whose stream was cut: broken, its timeline segment ended where its cursor stands. */
  private markBroken(o: WatchState): void {
    o.state = 'broken';
    if (o.segment !== undefined && o.segment.end === undefined) o.segment.end = { kind: 'broken', atRev: o.lane.cursor, compactRevision: 0, ...this.when() };
  }

  /** The bookkeeping of a watch that starts at `startRev` on `call`: its state and a new timeline segment. */
  private begin(w: WatchState, call: WatchCall, startRev: number): void {
    const s = this.s;
    w.call = call;
    w.state = 'open';
    w.compactRevision = 0;
    w.watchId = undefined;
    // Fragments of a response the old stream did not finish are lost with it (clientv3 drops them too).
    w.fragments.length = 0;
    w.fragmentOf.clear();
    w.openedAtMs = s.sim.clock.now();
    w.behind = startRev > 0 && startRev <= s.sim.mvcc.currentRevision;
    const seg: TimelineWatchSegment = { startRev, openedAtRev: s.sim.mvcc.currentRevision, openedAtMs: s.sim.clock.now(), line: s.line, end: undefined };
    w.segment = seg;
    w.lane.segments.push(seg);
    if (startRev > 0) w.lane.cursor = Math.max(w.lane.cursor, Math.min(startRev - 1, s.sim.mvcc.currentRevision));
    else w.lane.cursor = Math.max(w.lane.cursor, s.sim.mvcc.currentRevision);
  }

  /**
   * `watch NAME ... --stream=S`: the watch typed into the interactive session S. The session (one Watch
   * stream) opens with its first watch; the server tells its watches apart by the watch ID of each create.
   */
  private openShared(w: WatchState, startRev: number, name: string): void {
    const s = this.s;
    let st = this.streams.get(name);
    if (st !== undefined && st.open && st.endpoint !== s.engine.currentEndpoint()) {
      throw new RunError('error', `watch ${w.name} --stream=${name}: session ${name} talks to another member (an etcdctl watch -i session has one endpoint)`);
    }
    if (st === undefined || !st.open) {
      const call = s.sim.services.watch.watch(s.ctx());
      const fresh: SharedStream = { name, endpoint: s.engine.currentEndpoint(), call, byId: new Map(), pending: [], open: true };
      st = fresh;
      this.streams.set(name, fresh);
      call.onEnd((err) => {
        if (err === undefined) return;
        fresh.open = false;
        for (const o of [...fresh.byId.values(), ...fresh.pending]) if (o.call === call && o.state === 'open') this.markBroken(o);
      });
      call.onResponse((rs) => this.onSharedResponses(fresh, rs));
      s.out(`$ etcdctl ${s.engine.endpointFlag()}watch -i &   # session ${name}: one Watch stream; each watch typed into it shares the stream`);
    }
    this.begin(w, st.call, startRev);
    st.pending.push(w);
    if (w.slow) st.call.pause();
    st.call.write({ create_request: { ...w.create, start_revision: startRev } });
    s.out(`${name}> watch ${w.display}${startRev !== 0 ? ` --rev=${startRev}` : ''}   # watch ${w.name} on session ${name}'s stream, at rev ${s.sim.mvcc.currentRevision}${fragmentNote(w)}`);
  }

  /** A shared stream's responses: each to the watch whose ID it carries; a stream-wide progress answer (ID -1) to all. */
  private onSharedResponses(st: SharedStream, rs: M.WatchResponse[]): void {
    const s = this.s;
    for (const r of rs) {
      if (r.created) {
        const w = st.pending.shift();
        if (w === undefined) continue;
        w.watchId = r.watch_id;
        st.byId.set(r.watch_id, w);
        if (r.canceled) this.onResponses(w, st.call, [r]);
        continue;
      }
      if (r.watch_id === '-1' && r.events.length === 0) {
        const rev = Number(r.header.revision);
        s.timeMark();
        s.out(`[session ${st.name}] progress notify: ${rev}`);
        for (const w of st.byId.values()) {
          if (w.call !== st.call || w.state !== 'open') continue;
          w.progress.push(rev);
          w.lane.progress.push(rev);
          w.lane.progressSeen.push(w.lane.events.length);
          w.lane.progressLines.push(s.line);
        }
        continue;
      }
      const w = st.byId.get(r.watch_id);
      // A watch the client canceled itself: the server's acknowledgement ends it, nothing to print.
      if (w === undefined || w.state === 'closed') continue;
      this.onResponses(w, st.call, [r]);
    }
  }

  /** Opens a Watch stream for `w` and sends its create request at `startRev`. */
  private openStream(w: WatchState, startRev: number, how: 'watch' | 'resume' | 'reconnect'): void {
    const s = this.s;
    const call = s.sim.services.watch.watch(s.ctx());
    this.begin(w, call, startRev);
    call.onEnd((err) => {
      if (w.call !== call) return;
      if (err !== undefined && w.state === 'open') {
        w.state = 'broken';
        // On a cluster: its member crashed. clientv3 would keep redialing that one endpoint and resume the
        // watch once it is back; here the stream just ends (`resume` reopens it).
        if (w.endpoint !== undefined) {
          s.timeMark();
          s.out(`# [watch ${w.name}] its stream broke (${err.details}); resume ${w.name} --rev=N reopens it`);
        }
      }
    });
    call.onResponse((rs) => this.onResponses(w, call, rs));
    if (w.slow) call.pause();
    call.write({ create_request: { ...w.create, start_revision: startRev } });
    const cmd = `watch ${w.display}${startRev !== 0 ? ` --rev=${startRev}` : ''}`;
    if (how === 'reconnect') s.out(`# ${w.name}: its etcdctl reconnects (clientv3, printing nothing) and resumes on a new stream from rev ${startRev}`);
    else s.out(`$ etcdctl ${s.engine.endpointFlag()}${cmd} &   # ${how === 'watch' ? `watch ${w.name}` : `${w.name} resumed`}, at rev ${s.sim.mvcc.currentRevision}${fragmentNote(w)}`);
  }

  /** Prints what etcdctl prints for the responses of `w`'s current stream, and records them. */
  private onResponses(w: WatchState, call: WatchCall, rs: M.WatchResponse[]): void {
    const s = this.s;
    if (w.call !== call) return;
    for (const r of rs) {
      const rev = Number(r.header.revision);
      if (r.canceled) {
        s.timeMark();
        const reason = r.cancel_reason !== '' ? r.cancel_reason : r.compact_revision !== '0' ? 'etcdserver: mvcc: required revision has been compacted' : 'etcdserver: watch canceled';
        s.out(`[watch ${w.name}] watch was canceled (${reason})`);
        w.state = 'canceled';
        w.compactRevision = Number(r.compact_revision);
        if (w.segment !== undefined) w.segment.end = { kind: 'canceled', atRev: Math.max(w.compactRevision, w.lane.cursor), compactRevision: w.compactRevision, ...this.when() };
        const what = `# watch ${w.name}: canceled${w.compactRevision > 0 ? ` with compact_revision ${w.compactRevision}` : ''}`;
        if (w.stream !== undefined && w.watchId !== undefined) {
          // `etcdctl watch -i` prints the cancel (on stderr) and keeps its session, and the stream, going
          // (observed on 3.4.23).
          s.out(`${what}; session ${w.stream} and its other watches go on`);
          return;
        }
        s.out(`[watch ${w.name}] Error: watch is canceled by the server`);
        // etcdctl 3.4 watch ends with ExitWithError(ExitInterrupted, ...): exit status 5 (observed on 3.4.23).
        s.out(`${what}; etcdctl exits with status 5`);
        call.end();
        return;
      }
      if (r.created) continue;
      if (r.events.length === 0) {
        s.timeMark();
        s.out(`[watch ${w.name}] progress notify: ${rev}`);
        w.progress.push(rev);
        w.lane.progress.push(rev);
        w.lane.progressSeen.push(w.lane.events.length);
        w.lane.progressLines.push(s.line);
        continue;
      }
      s.timeMark();
      w.responses++;
      const n = r.events.length;
      if (r.fragment) {
        // clientv3 keeps a fragment's events until the last fragment, then delivers them as one response.
        for (const ev of r.events) w.fragmentOf.set(ev, w.responses);
        w.fragments.push(...r.events);
        s.out(`# [watch ${w.name}] a response with ${n} event${n === 1 ? '' : 's'}, fragment: true (clientv3 holds it until the last fragment)`);
        continue;
      }
      const joined = w.fragments.length > 0;
      const events = joined ? [...w.fragments.splice(0), ...r.events] : r.events;
      if (joined) s.out(`# [watch ${w.name}] the last fragment (${n} event${n === 1 ? '' : 's'}, fragment: false): clientv3 hands over all ${events.length} events as one response`);
      for (const ev of events) {
        const er = Number(ev.kv.mod_revision);
        for (const l of watchEventLines(ev)) s.out(`[watch ${w.name} @${er}] ${l}`.trimEnd());
        const rec: ReceivedEvent = { type: ev.type, key: str(ev.kv.key), rev: er };
        w.events.push(rec);
        const fragmentResponse = w.fragmentOf.get(ev);
        w.fragmentOf.delete(ev);
        w.lane.events.push({ ...rec, segment: w.lane.segments.length - 1, line: s.line, response: fragmentResponse ?? w.responses, fragment: fragmentResponse !== undefined });
        w.lane.cursor = Math.max(w.lane.cursor, er);
      }
    }
  }
}
