/**
 * What one run of a script keeps between steps: the simulated member, the transcript being written
 * (with the virtual time shown as it moves), the shell variables, the last response (what etcdctl printed
 * and what `expect` and captures look at), and the timeline model being drawn.
 */
import type { EtcdSim } from '../../client/index.js';
import type { LessorEvent } from '../../lease/index.js';
import type { CommitListener } from '../../mvcc/index.js';
import { isGrpcError, type AuthService, type CallContext, type KVService, type LeaseService, type WatchService } from '../../server/index.js';
import type * as M from '../../server/messages.js';
import { RunError } from '../run_error.js';
import { showTime } from '../format.js';
import { ShellVariables } from '../shell/expand.js';
import type { TimelineModel } from '../timeline/index.js';

/** The last etcdctl command's result: its header revision or error, and what etcdctl printed. */
export interface LastResponse {
  revision: number | undefined;
  error: string | undefined;
  output: string[];
  /** The Range response when the command was a get (for `expect keys`, `more`, `count`, `next_key`). */
  range: M.RangeResponse | undefined;
  /** The command, for messages ("the last step, put, ..."). */
  what: string;
}

/**
 * etcd's services as a script's commands call them, answering synchronously: a single member's own, or a
 * cluster member's (run/cluster.ts), whose answers the run waits for by moving the virtual clock.
 */
export interface ScenarioServices {
  readonly kv: Pick<KVService, 'put' | 'range' | 'deleteRange' | 'txn' | 'compact'>;
  readonly lease: Pick<LeaseService, 'leaseGrant' | 'leaseRevoke' | 'leaseTimeToLive' | 'leaseKeepAlive'>;
  readonly auth: Pick<AuthService, 'authenticate'>;
  readonly watch: Pick<WatchService, 'watch'>;
}

/**
 * The member a script's commands go to: a whole single-member simulator (createEtcdSim), or on a cluster
 * the member etcdctl is pointed at (`use`, `--endpoints`), whose server a restart replaces.
 */
export type ScenarioSim = Pick<EtcdSim, 'clock' | 'server' | 'mvcc' | 'lessor' | 'watchable' | 'snapshot' | 'restore'> & { readonly services: ScenarioServices };

/**
 * How time and delivery go for a run: a single member's own loops, or a cluster's (every member, the Raft
 * ticks). Writes and lease revocations are reported once, whichever member applies them first.
 */
export interface ScenarioEngine {
  /** Moves virtual time by `ms`, running every timer due meanwhile and delivering stream responses. */
  advance(ms: number): void;
  /** Delivers queued stream responses. */
  flush(): void;
  /** Calls `fn` for every revision a member commits (once per revision). */
  onWrite(fn: CommitListener): void;
  /** Calls `fn` for every lease revoked (once per lease and revision). */
  onLeaseRevoked(fn: (ev: Extract<LessorEvent, { type: 'revoke' }>) => void): void;
  /** Moves time, instant by instant, until `done()` or `ms` have passed; whether `done()` came true. */
  waitUntil(done: () => boolean, ms: number): boolean;
  /** etcdctl's `--endpoints=... ` for the member the running command goes to ('' on a single member). */
  endpointFlag(): string;
  /** The member commands go to now (undefined on a single member). */
  currentEndpoint(): number | undefined;
  /** Runs `fn` with commands going to member `i` (a watch resumed on the member it was opened on). */
  withEndpoint<T>(i: number | undefined, fn: () => T): T;
}

/** A single member's engine: its own loops, on its own clock. */
export function memberEngine(sim: EtcdSim): ScenarioEngine {
  return {
    advance: (ms) => sim.server.advance(ms),
    flush: () => void sim.server.flush(),
    onWrite: (fn) => void sim.mvcc.subscribe(fn),
    onLeaseRevoked: (fn) =>
      void sim.lessor.subscribe((ev) => {
        if (ev.type === 'revoke') fn(ev);
      }),
    // One member answers at once: there is never anything to wait for.
    waitUntil: (done) => done(),
    endpointFlag: () => '',
    currentEndpoint: () => undefined,
    withEndpoint: (_i, fn) => fn(),
  };
}

/** One run's state, shared by the steps' parts (commands, directives, watches, leases, expectations). */
export class RunState {
  readonly transcript: string[] = [];
  readonly vars = new ShellVariables();
  last: LastResponse = { revision: undefined, error: undefined, output: [], range: undefined, what: 'nothing yet' };
  /** What makes the writes that happen now (the timeline's `cause`): `line N`, `lease expiry`, `restore S`. */
  cause = 'setup';
  /** The line of the step running. */
  line = 0;
  private shownTime = 0;
  private advanceTarget = -1;
  /** Whether a moment inside the running advance was marked with a `# t=...` line. */
  private markedInAdvance = false;
  /** Where the running command began to wait for its answer (its line goes there) and when. */
  private waitMark: { readonly at: number; readonly since: number } | undefined;
  /** etcdctl's `--user NAME:PASSWORD` for every command (from-snapshot ... --user), and its current token. */
  private credentials: { readonly name: string; readonly password: string; token: string | undefined } | undefined;

  constructor(
    readonly sim: ScenarioSim,
    readonly timeline: TimelineModel,
    readonly engine: ScenarioEngine,
  ) {}

  /**
   * From now on every request carries a token of this user, as etcdctl with `--user NAME:PASSWORD` sends;
   * etcd's answer when it refuses them (wrong password, unknown user) stops the run, as etcdctl stops.
   */
  logIn(name: string, password: string): void {
    try {
      this.credentials = { name, password, token: this.sim.services.auth.authenticate({ name, password }).token };
    } catch (err) {
      if (!isGrpcError(err)) throw err;
      throw new RunError('error', `--user ${name}: ${err.details}`);
    }
  }

  /**
   * The call context of a request (undefined without `--user`): the current token, as clientv3 attaches it.
   */
  ctx(): CallContext | undefined {
    const c = this.credentials;
    if (c === undefined) return undefined;
    if (c.token === undefined) this.authenticate();
    return { token: c.token };
  }

  /**
   * Authenticates again (clientv3 does when etcd answers `invalid auth token`, e.g. after the simple token's
   * TTL); false without credentials. A failure (wrong password) leaves no token: the requests then fail as
   * etcd answers them.
   */
  authenticate(): boolean {
    const c = this.credentials;
    if (c === undefined) return false;
    try {
      c.token = this.sim.services.auth.authenticate({ name: c.name, password: c.password }).token;
    } catch {
      c.token = undefined;
    }
    return true;
  }

  /** Appends a transcript line, noting which script line printed it (the timeline links the two). */
  out(line: string): void {
    this.transcript.push(line);
    this.timeline.transcriptLines.push(this.line);
  }

  /** Inserts transcript lines at `at` (printed by the step running now, shown before what followed them). */
  insert(at: number, lines: readonly string[]): void {
    this.transcript.splice(at, 0, ...lines);
    this.timeline.transcriptLines.splice(at, 0, ...lines.map(() => this.line));
  }

  /** Before something the member did on its own: a `# t=...` line if time moved since the last one shown. */
  timeMark(): void {
    const now = this.sim.clock.now();
    // The advance line already shows its end — unless an earlier moment of it was marked since (a victim step
    // at t=0.01s, then a sync step at the end): then the end needs its own mark.
    if (now === this.advanceTarget && !this.markedInAdvance) this.shownTime = now;
    if (now !== this.shownTime) {
      this.shownTime = now;
      if (this.advanceTarget >= 0) this.markedInAdvance = true;
      this.out(`# t=${showTime(now)}`);
    }
  }

  /** `advance D`: moves virtual time by `ms`, running every step of etcd's loops due meanwhile. */
  advance(ms: number, raw: string): void {
    const target = this.sim.clock.now() + ms;
    this.out(`# advance ${raw} → t=${showTime(target)}`);
    this.advanceTarget = target;
    this.markedInAdvance = false;
    this.engine.advance(ms);
    this.advanceTarget = -1;
    this.shownTime = target;
  }

  /** Delivers queued stream responses (after each step, and where a step needs its watches up to date). */
  flush(): void {
    this.engine.flush();
  }

  /**
   * The running command waits for its answer while time moves (a cluster member waiting for Raft): what
   * happens meanwhile prints after the command line, as in a terminal, so the line goes here (see command).
   */
  beginWait(): void {
    if (this.waitMark === undefined) this.waitMark = { at: this.transcript.length, since: this.sim.clock.now() };
  }

  /** A new step: no command is waiting. */
  endWait(): void {
    this.waitMark = undefined;
  }

  /**
   * A command line (with `input`, what it reads from a here-document) and what etcdctl printed for it. After a
   * wait the line goes where the wait began (before what happened meanwhile) and a `# t=...` line says when the
   * answer came.
   */
  command(line: string, output: readonly string[], input: readonly string[] = []): void {
    const w = this.waitMark;
    this.waitMark = undefined;
    if (w === undefined) for (const l of [line, ...input]) this.out(l);
    else {
      // What was typed (the command line and its here-document) goes before what happened meanwhile.
      this.insert(w.at, [line, ...input]);
      const now = this.sim.clock.now();
      if (now !== w.since) {
        this.shownTime = now;
        this.out(`# t=${showTime(now)}: etcdctl has its answer ${showTime(now - w.since)} after sending the request`);
      }
    }
    for (const l of output) this.out(l);
  }
}
