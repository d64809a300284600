/**
 * What one run of a script keeps between steps: the simulated member, the transcript being written
 * (with the virtual time shown as it moves), the shell variables, the last response (what etcdctl printed
 * and what `expect` and captures look at), and the timeline model being drawn.
 */
import type { EtcdSim } from '../../client/index.js';
import { isGrpcError, type CallContext, type messages as M } from '../../server/index.js';
import { RunError } from '../run_error.js';
import { showTime } from '../format.js';
import { ShellVariables } from '../shell/expand.js';
import type { TimelineModel } from '../timeline.js';

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
  /** etcdctl's `--user NAME:PASSWORD` for every command (from-snapshot ... --user), and its current token. */
  private credentials: { readonly name: string; readonly password: string; token: string | undefined } | undefined;

  constructor(
    readonly sim: EtcdSim,
    readonly timeline: TimelineModel,
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
    if (now === this.advanceTarget) this.shownTime = now; // the advance line already shows it
    if (now !== this.shownTime) {
      this.shownTime = now;
      this.out(`# t=${showTime(now)}`);
    }
  }

  /** `advance D`: moves virtual time by `ms`, running every step of etcd's loops due meanwhile. */
  advance(ms: number, raw: string): void {
    const target = this.sim.clock.now() + ms;
    this.out(`# advance ${raw} → t=${showTime(target)}`);
    this.advanceTarget = target;
    this.sim.server.advance(ms);
    this.advanceTarget = -1;
    this.shownTime = target;
  }
}
