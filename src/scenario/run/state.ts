/**
 * What one run of a script keeps between steps: the simulated member, the transcript being written
 * (with the virtual time shown as it moves), the shell variables, the last response (what etcdctl printed
 * and what `expect` and captures look at), and the timeline model being drawn.
 */
import type { EtcdSim } from '../../client/index.js';
import type { messages as M } from '../../server/index.js';
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

  constructor(
    readonly sim: EtcdSim,
    readonly timeline: TimelineModel,
  ) {}

  /** Appends a transcript line. */
  out(line: string): void {
    this.transcript.push(line);
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
