/**
 * Runs a scenario script on one simulated member (createEtcdSim) through its services in etcd's message
 * form — the same path every front door takes, so no etcd rule is re-implemented here. The run is
 * deterministic: virtual time moves only on `advance`, random choices (lease IDs) come from the seed.
 *
 * Output: a transcript (what etcdctl 3.4 prints for each step, watch events as they arrive, directives and
 * expectations as `#` lines) and a timeline model for the picture.
 */
import { Buffer } from 'node:buffer';
import { createEtcdSim, type EtcdSim } from '../client/index.js';
import { isGrpcError, type messages as M, type WatchCall } from '../server/index.js';
import type { EtcdVersion, StoreSnapshot } from '../mvcc/index.js';
import { prefixEnd } from '../mvcc/index.js';
import {
  delJson,
  delSimple,
  getJson,
  getSimple,
  keepAliveLine,
  leaseGrantLine,
  leaseHex,
  putJson,
  putSimple,
  shellQuote,
  showTime,
  str,
  timeToLiveLine,
  txnSimple,
  watchEventLines,
} from './format.js';
import {
  parseScenario,
  ScenarioSyntaxError,
  type CompareOp,
  type DelCmd,
  type Directive,
  type EtcdCommand,
  type Expectation,
  type GetCmd,
  type ParsedScenario,
  type PutCmd,
  type Step,
  type TxnOp,
  type Word,
} from './parser.js';
import { emptyTimeline, type TimelineLease, type TimelineModel, type TimelineWatcher, type TimelineWatchSegment } from './timeline.js';

export interface RunOptions {
  /** Seed of every random choice (lease IDs). Default 0. */
  readonly seed?: number | undefined;
  /** Run only this variant (default: every declared variant, in order). */
  readonly variant?: string | undefined;
  /** Title for the timeline (e.g. the file name). */
  readonly title?: string | undefined;
}

export interface ScenarioFailure {
  readonly line: number;
  readonly message: string;
  readonly variant: string | undefined;
  readonly kind: 'syntax' | 'expectation' | 'error';
}

export interface VariantRun {
  readonly variant: string | undefined;
  readonly settings: readonly string[];
  readonly transcript: readonly string[];
  readonly timeline: TimelineModel;
  readonly ok: boolean;
  readonly failure: ScenarioFailure | undefined;
}

export interface ScenarioResult {
  /** The whole transcript: the scenario's description, then every run (one per variant). */
  readonly transcript: readonly string[];
  /** The timeline of the first run (see `runs` for every variant's). */
  readonly timeline: TimelineModel;
  readonly runs: readonly VariantRun[];
  readonly ok: boolean;
  /** The first failure (a malformed line, an expectation, an unexpected runtime error). */
  readonly failure: ScenarioFailure | undefined;
}

/** A problem while running a step: stops the run with the step's line number. */
class RunError extends Error {
  constructor(
    readonly kind: 'expectation' | 'error',
    message: string,
  ) {
    super(message);
  }
}

/** Parses and runs a scenario: every variant in turn (or the one asked for). Never throws for a bad script. */
export function runScenario(text: string, options: RunOptions = {}): ScenarioResult {
  const title = options.title ?? 'scenario';
  let parsed: ParsedScenario;
  try {
    parsed = parseScenario(text);
  } catch (err) {
    if (!(err instanceof ScenarioSyntaxError)) throw err;
    const failure: ScenarioFailure = { line: err.line, message: err.detail, variant: undefined, kind: 'syntax' };
    const timeline = emptyTimeline(title, undefined, []);
    timeline.failure = `line ${err.line}: ${err.detail}`;
    const transcript = [`# syntax error at line ${err.line}: ${err.detail}`];
    return { transcript, timeline, runs: [], ok: false, failure };
  }
  const { settings } = parsed;
  let variants: { name: string | undefined; options: ReadonlyMap<string, string> }[] =
    settings.variants.length === 0 ? [{ name: undefined, options: new Map() }] : settings.variants.map((v) => ({ name: v.name, options: v.options }));
  if (options.variant !== undefined) {
    variants = variants.filter((v) => v.name === options.variant);
    if (variants.length === 0) {
      const message = `no variant named ${options.variant} (declared: ${settings.variants.map((v) => v.name).join(', ') || 'none'})`;
      const timeline = emptyTimeline(title, options.variant, []);
      timeline.failure = message;
      return { transcript: [`# ${message}`], timeline, runs: [], ok: false, failure: { line: 0, message, variant: options.variant, kind: 'syntax' } };
    }
  }
  const runs: VariantRun[] = [];
  for (const v of variants) {
    const merged = new Map(settings.options);
    for (const [k, val] of v.options) merged.set(k, val);
    runs.push(new Run(parsed, v.name, merged, options.seed ?? 0, title).execute());
  }
  const transcript: string[] = settings.preamble.map((l) => `## ${l}`.trimEnd());
  for (const r of runs) {
    if (transcript.length > 0) transcript.push('');
    if (r.variant !== undefined) transcript.push(`=== variant ${r.variant}${r.settings.length > 0 ? `: ${r.settings.join(', ')}` : ''} ===`);
    transcript.push(...r.transcript);
  }
  const failed = runs.find((r) => !r.ok);
  return { transcript, timeline: runs[0]!.timeline, runs, ok: failed === undefined, failure: failed?.failure };
}

// ---------------------------------------------------------------------------------------------------

interface RecEvent {
  readonly type: 'PUT' | 'DELETE';
  readonly key: string;
  readonly rev: number;
}

interface WatchState {
  readonly name: string;
  readonly create: M.WatchCreateRequest;
  readonly display: string;
  call: WatchCall | undefined;
  state: 'open' | 'canceled' | 'broken' | 'closed';
  compactRevision: number;
  slow: boolean;
  readonly events: RecEvent[];
  readonly progress: number[];
  readonly lane: TimelineWatcher;
  segment: TimelineWatchSegment | undefined;
}

interface Last {
  revision: number | undefined;
  error: string | undefined;
  output: string[];
  range: M.RangeResponse | undefined;
  what: string;
}

class Run {
  private readonly sim: EtcdSim;
  private readonly transcript: string[] = [];
  private readonly vars = new Map<string, string>();
  private readonly watches = new Map<string, WatchState>();
  private readonly snapshots = new Map<string, StoreSnapshot>();
  private readonly timeline: TimelineModel;
  private readonly leases = new Map<string, TimelineLease>();
  private readonly settingsShown: string[];
  private last: Last = { revision: undefined, error: undefined, output: [], range: undefined, what: 'nothing yet' };
  private lastLease: string | undefined;
  private cause = 'setup';
  private shownTime = 0;
  private advanceTarget = -1;
  private line = 0;

  constructor(
    private readonly parsed: ParsedScenario,
    private readonly variant: string | undefined,
    opts: ReadonlyMap<string, string>,
    seed: number,
    title: string,
  ) {
    const num = (k: string): number | undefined => (opts.has(k) ? Number(opts.get(k)) : undefined);
    const bool = (k: string): boolean | undefined => (opts.has(k) ? opts.get(k) === 'true' : undefined);
    this.sim = createEtcdSim({
      time: 'virtual',
      seed,
      etcdVersion: opts.get('etcd-version') as EtcdVersion | undefined,
      minLeaseTTL: num('minLeaseTTL'),
      watchChanBufLen: num('watchChanBufLen'),
      watchSendWindowBytes: num('watchSendWindowBytes'),
      watchProgressNotifyIntervalMs: num('watchProgressNotifyIntervalMs'),
      restoreKeepsFutureMinRev: bool('restoreKeepsFutureMinRev'),
      progressRespectsStartRev: bool('progressRespectsStartRev'),
    });
    this.settingsShown = [...opts].map(([k, v]) => `${k}=${v}`);
    this.timeline = emptyTimeline(title, variant, this.settingsShown);
    this.sim.kv.subscribe((rev, events) => {
      for (const ev of events) {
        this.timeline.writes.push({ key: str(ev.kv.key), rev, type: ev.type, value: str(ev.kv.value), cause: this.cause });
      }
      this.timeline.maxRevision = Math.max(this.timeline.maxRevision, rev);
    });
    this.sim.lessor.subscribe((ev) => {
      if (ev.type !== 'revoke' || ev.reason !== 'expire') return;
      const hex = leaseHex(ev.id);
      const l = this.leases.get(hex);
      if (l !== undefined) l.end = { kind: 'expired', atRev: ev.revision, atMs: ev.at };
      this.note(`# t=${showTime(ev.at)}: lease ${hex} expired; the lessor revoked it${ev.deleted > 0 ? `, deleting ${ev.deleted} key${ev.deleted === 1 ? '' : 's'} at revision ${ev.revision}` : ' (no keys attached)'}`);
    });
  }

  execute(): VariantRun {
    const shown = this.settingsShown;
    if (shown.length > 0 && this.variant === undefined) this.out(`# options: ${shown.join(', ')}`);
    let failure: ScenarioFailure | undefined;
    for (const step of this.parsed.steps) {
      if (step.variant !== undefined && step.variant !== this.variant) continue;
      this.line = step.line;
      try {
        this.step(step);
        this.sim.flush();
      } catch (err) {
        if (!(err instanceof RunError)) throw err;
        failure = { line: step.line, message: err.message, variant: this.variant, kind: err.kind };
        this.out(`# ✗ line ${step.line}: ${err.message}`);
        break;
      }
    }
    this.timeline.failure = failure === undefined ? undefined : `line ${failure.line}: ${failure.message}`;
    for (const w of this.watches.values()) w.lane.cursor = Math.max(w.lane.cursor, 0);
    return { variant: this.variant, settings: this.settingsShown, transcript: this.transcript, timeline: this.timeline, ok: failure === undefined, failure };
  }

  // -------------------------------------------------------------------------------------------------
  // Output

  private out(line: string): void {
    this.transcript.push(line);
  }

  /** A simulator observation, timestamped if time moved since the last one. */
  private note(line: string): void {
    this.out(line);
  }

  private timeMark(): void {
    const now = this.sim.clock.now();
    if (now === this.advanceTarget) this.shownTime = now; // the advance line already shows it
    if (now !== this.shownTime) {
      this.shownTime = now;
      this.out(`# t=${showTime(now)}`);
    }
  }

  // -------------------------------------------------------------------------------------------------
  // Words

  private expand(w: Word): string {
    return w.segments.map((s) => (s.expand ? this.interpolate(s.text) : s.text)).join('');
  }

  private lookup(name: string): string {
    const v = this.vars.get(name);
    if (v === undefined) throw new RunError('error', `variable ${name} is not set (capture it first, e.g. ${name} = revision)`);
    return v;
  }

  private interpolate(s: string): string {
    return s.replace(/\$\(\((.*?)\)\)|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (_m, expr: string | undefined, a: string | undefined, b: string | undefined) =>
      expr !== undefined ? String(this.arith(expr)) : this.lookup((a ?? b)!),
    );
  }

  /** Integer arithmetic as in $(( )): + - * / % and parentheses over integers and variables. */
  private arith(src: string): number {
    const toks = src.match(/\d+|[A-Za-z_][A-Za-z0-9_]*|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|[-+*/%()]|\S/g) ?? [];
    let i = 0;
    const fail = (): never => {
      throw new RunError('error', `cannot evaluate $((${src}))`);
    };
    const primary = (): number => {
      const t = toks[i++];
      if (t === undefined) return fail();
      if (t === '(') {
        const v = sum();
        if (toks[i++] !== ')') fail();
        return v;
      }
      if (t === '-') return -primary();
      if (/^\d+$/.test(t)) return Number(t);
      const name = t.replace(/^\$\{?/, '').replace(/\}$/, '');
      if (/^[A-Za-z_]\w*$/.test(name)) {
        const v = this.lookup(name);
        if (!/^-?\d+$/.test(v)) throw new RunError('error', `variable ${name} is ${JSON.stringify(v)}, not an integer, in $((${src}))`);
        return Number(v);
      }
      return fail();
    };
    const product = (): number => {
      let v = primary();
      while (toks[i] === '*' || toks[i] === '/' || toks[i] === '%') {
        const op = toks[i++];
        const r = primary();
        v = op === '*' ? v * r : op === '/' ? Math.trunc(v / r) : v % r;
      }
      return v;
    };
    const sum = (): number => {
      let v = product();
      while (toks[i] === '+' || toks[i] === '-') {
        const op = toks[i++];
        const r = product();
        v = op === '+' ? v + r : v - r;
      }
      return v;
    };
    const v = sum();
    if (i !== toks.length) fail();
    return v;
  }

  private int(w: Word, what: string): number {
    const s = this.expand(w);
    if (!/^-?\d+$/.test(s)) throw new RunError('error', `${what}: expected an integer, got ${JSON.stringify(s)} (from ${w.raw})`);
    return Number(s);
  }

  /** A lease ID as etcdctl takes it: hexadecimal. Returns the decimal int64 string. */
  private leaseId(w: Word): string {
    const s = this.expand(w).replace(/^0x/i, '');
    if (!/^[0-9a-fA-F]{1,16}$/.test(s)) throw new RunError('error', `expected a lease ID in hex (as etcdctl prints it), got ${JSON.stringify(s)} (from ${w.raw})`);
    return BigInt(`0x${s}`).toString();
  }

  private bytes(w: Word): Buffer {
    return Buffer.from(this.expand(w), 'utf8');
  }

  // -------------------------------------------------------------------------------------------------
  // Steps

  private step(step: Step): void {
    this.cause = `line ${step.line}`;
    switch (step.type) {
      case 'command':
        this.command(step.command);
        break;
      case 'directive':
        this.directive(step.directive);
        break;
      case 'expect':
        this.expectation(step.expect, step.text);
        break;
    }
    this.cause = 'lease expiry';
  }

  /** Runs a call, recording its header revision, output and error as the "last response". */
  private call<T extends { header: M.ResponseHeader }>(what: string, fn: () => T, print: (r: T) => string[], errorText: (d: string) => string = (d) => `Error: ${d}`): T | undefined {
    try {
      const r = fn();
      const lines = print(r);
      this.last = { revision: Number(r.header.revision), error: undefined, output: lines, range: undefined, what };
      return r;
    } catch (err) {
      if (!isGrpcError(err)) throw err;
      this.last = { revision: undefined, error: err.details, output: [errorText(err.details)], range: undefined, what };
      return undefined;
    }
  }

  private echo(cmd: string, note?: string): void {
    const ann: string[] = [];
    if (this.last.revision !== undefined) ann.push(`rev ${this.last.revision}`);
    if (note !== undefined) ann.push(note);
    this.out(`$ etcdctl ${cmd}${ann.length > 0 ? `   # ${ann.join(', ')}` : ''}`);
    for (const l of this.last.output) this.out(l);
  }

  private rangeOf(c: { key: Word; rangeEnd: Word | undefined; prefix: boolean; fromKey: boolean }): { key: Buffer; range_end?: Buffer } {
    const key = this.bytes(c.key);
    if (c.prefix) return { key: key.byteLength === 0 ? Buffer.from([0]) : key, range_end: Buffer.from(key.byteLength === 0 ? [0] : prefixEnd(key)) };
    if (c.fromKey) return { key: key.byteLength === 0 ? Buffer.from([0]) : key, range_end: Buffer.from([0]) };
    if (c.rangeEnd !== undefined) return { key, range_end: this.bytes(c.rangeEnd) };
    return { key };
  }

  private showKvCmd(c: TxnOp): string {
    const parts: string[] = [c.kind, shellQuote(this.expand(c.key))];
    if (c.kind === 'put') {
      parts.push(shellQuote(this.expand(c.value)));
      if (c.lease !== undefined) parts.push(`--lease=${this.expand(c.lease)}`);
      if (c.prevKv) parts.push('--prev-kv');
    } else {
      if (c.rangeEnd !== undefined) parts.push(shellQuote(this.expand(c.rangeEnd)));
      if (c.prefix) parts.push('--prefix');
      if (c.fromKey) parts.push('--from-key');
      if (c.kind === 'get') {
        if (c.rev !== undefined) parts.push(`--rev=${this.expand(c.rev)}`);
        if (c.limit !== undefined) parts.push(`--limit=${this.expand(c.limit)}`);
        if (c.keysOnly) parts.push('--keys-only');
        if (c.printValueOnly) parts.push('--print-value-only');
      } else if (c.prevKv) parts.push('--prev-kv');
    }
    if (c.json) parts.push('-w json');
    return parts.join(' ');
  }

  private putReq(c: PutCmd): M.PutRequest {
    return { key: this.bytes(c.key), value: this.bytes(c.value), lease: c.lease === undefined ? undefined : this.leaseId(c.lease), prev_kv: c.prevKv };
  }

  private getReq(c: GetCmd): M.RangeRequest {
    return {
      ...this.rangeOf(c),
      revision: c.rev === undefined ? undefined : this.int(c.rev, '--rev'),
      limit: c.limit === undefined ? undefined : this.int(c.limit, '--limit'),
      keys_only: c.keysOnly,
    };
  }

  private delReq(c: DelCmd): M.DeleteRangeRequest {
    return { ...this.rangeOf(c), prev_kv: c.prevKv };
  }

  private command(c: EtcdCommand, quiet = false): void {
    const kv = this.sim.services.kv;
    const lease = this.sim.services.lease;
    switch (c.kind) {
      case 'put': {
        const req = this.putReq(c);
        this.call('put', () => kv.put(req), (r) => (c.json ? [putJson(r)] : putSimple(r)));
        if (!quiet) this.echo(this.showKvCmd(c));
        return;
      }
      case 'get': {
        const req = this.getReq(c);
        const r = this.call('get', () => kv.range(req), (r) => (c.json ? [getJson(r)] : getSimple(r, c.printValueOnly)));
        if (r !== undefined) this.last.range = r;
        const readAt = req.revision !== undefined && req.revision !== 0 ? `read at ${String(req.revision)}` : undefined;
        if (!quiet) this.echo(this.showKvCmd(c), r !== undefined && r.more ? [readAt, 'more'].filter((x) => x !== undefined).join(', ') : readAt);
        return;
      }
      case 'del': {
        const req = this.delReq(c);
        this.call('del', () => kv.deleteRange(req), (r) => (c.json ? [delJson(r)] : delSimple(r)));
        if (!quiet) this.echo(this.showKvCmd(c));
        return;
      }
      case 'txn': {
        const req: M.TxnRequest = {
          compare: c.compares.map((cmp) => {
            const key = this.bytes(cmp.key);
            const result = ({ '=': 'EQUAL', '!=': 'NOT_EQUAL', '>': 'GREATER', '<': 'LESS' } as const)[cmp.op];
            const operand = this.expand(cmp.operand);
            switch (cmp.target) {
              case 'VALUE':
                return { key, result, target: 'VALUE', target_union: 'value', value: Buffer.from(operand, 'utf8') };
              case 'LEASE':
                return { key, result, target: 'LEASE', target_union: 'lease', lease: this.leaseId(cmp.operand) };
              default: {
                if (!/^-?\d+$/.test(operand)) throw new RunError('error', `txn compare ${cmp.raw}: expected an integer, got ${JSON.stringify(operand)}`);
                const field = cmp.target === 'MOD' ? 'mod_revision' : cmp.target === 'CREATE' ? 'create_revision' : 'version';
                return { key, result, target: cmp.target, target_union: field, [field]: operand };
              }
            }
          }),
          success: c.success.map((op) => this.requestOp(op)),
          failure: c.failure.map((op) => this.requestOp(op)),
        };
        this.call('txn', () => kv.txn(req), txnSimple);
        const ann = this.last.revision !== undefined ? `   # rev ${this.last.revision}` : '';
        this.out(`$ etcdctl txn <<EOF${ann}`);
        for (const b of c.body) this.out(b.text === '' || b.words.length === 0 ? this.interpolate(b.text) : [b.text.split(/\s+/)[0], ...this.showTxnOp(b.words)].join(' '));
        this.out('EOF');
        for (const l of this.last.output) this.out(l);
        return;
      }
      case 'compact': {
        const rev = this.int(c.rev, 'compact');
        this.call('compact', () => kv.compact({ revision: rev, physical: c.physical }), () => [`compacted revision ${rev}`]);
        if (this.last.error === undefined) this.timeline.compactions.push({ rev, line: this.line });
        this.echo(`compact ${rev}${c.physical ? ' --physical' : ''}`);
        return;
      }
      case 'watch': {
        if (this.watches.has(c.name)) throw new RunError('error', `a watch named ${c.name} already exists (use resume ${c.name} --rev=N, or another name)`);
        const range = this.rangeOf({ key: c.key, rangeEnd: c.rangeEnd, prefix: c.prefix, fromKey: false });
        const rev = c.rev === undefined ? 0 : this.int(c.rev, '--rev');
        const create: M.WatchCreateRequest = { ...range, prev_kv: c.prevKv, progress_notify: c.progressNotify };
        const display = [shellQuote(this.expand(c.key)), c.rangeEnd !== undefined ? shellQuote(this.expand(c.rangeEnd)) : undefined, c.prefix ? '--prefix' : undefined, c.prevKv ? '--prev-kv' : undefined, c.progressNotify ? '--progress-notify' : undefined]
          .filter((x) => x !== undefined)
          .join(' ');
        const lane: TimelineWatcher = { name: c.name, range: `${this.expand(c.key)}${c.prefix ? '*' : ''}`, segments: [], events: [], progress: [], cursor: 0 };
        this.timeline.watchers.push(lane);
        const w: WatchState = { name: c.name, create, display, call: undefined, state: 'open', compactRevision: 0, slow: false, events: [], progress: [], lane, segment: undefined };
        this.watches.set(c.name, w);
        this.openWatch(w, rev, 'watch');
        return;
      }
      case 'lease-grant': {
        const ttl = this.int(c.ttl, 'lease grant');
        const r = this.call('lease grant', () => lease.leaseGrant({ TTL: ttl }), (r) => [leaseGrantLine(r)]);
        if (r !== undefined) {
          const hex = leaseHex(r.ID);
          this.lastLease = hex;
          const l: TimelineLease = { id: hex, ttl: Number(r.TTL), grantedAtRev: this.sim.kv.currentRevision, grantedAtMs: this.sim.clock.now(), keepAlives: [], end: undefined };
          this.leases.set(hex, l);
          this.timeline.leases.push(l);
        }
        this.echo(`lease grant ${ttl}`);
        return;
      }
      case 'lease-keep-alive': {
        const id = this.leaseId(c.id);
        const callObj = lease.leaseKeepAlive();
        let endErr: string | undefined;
        callObj.onEnd((e) => {
          if (e !== undefined) endErr = e.details;
        });
        callObj.write({ ID: id });
        const rs = callObj.take();
        callObj.end();
        const r = rs[0];
        if (r === undefined || r.TTL === '0') {
          // clientv3's KeepAliveOnce turns TTL 0 into ErrLeaseNotFound.
          const d = endErr !== undefined && endErr !== '' ? endErr : 'etcdserver: requested lease not found';
          this.last = { revision: undefined, error: d, output: [`Error: ${d}`], range: undefined, what: 'lease keep-alive' };
        } else {
          this.last = { revision: Number(r.header.revision), error: undefined, output: [keepAliveLine(r)], range: undefined, what: 'lease keep-alive' };
          this.leases.get(leaseHex(id))?.keepAlives.push({ atRev: this.sim.kv.currentRevision, atMs: this.sim.clock.now() });
        }
        this.echo(`lease keep-alive ${leaseHex(id)} --once`);
        return;
      }
      case 'lease-revoke': {
        const id = this.leaseId(c.id);
        const r = this.call('lease revoke', () => lease.leaseRevoke({ ID: id }), () => [`lease ${leaseHex(id)} revoked`], (d) => `Error: failed to revoke lease (${d})`);
        if (r !== undefined) {
          const l = this.leases.get(leaseHex(id));
          if (l !== undefined) l.end = { kind: 'revoked', atRev: this.sim.kv.currentRevision, atMs: this.sim.clock.now() };
        }
        this.echo(`lease revoke ${leaseHex(id)}`);
        return;
      }
      case 'lease-timetolive': {
        const id = this.leaseId(c.id);
        this.call('lease timetolive', () => lease.leaseTimeToLive({ ID: id, keys: c.keys }), (r) => [timeToLiveLine(r, c.keys)]);
        this.echo(`lease timetolive ${leaseHex(id)}${c.keys ? ' --keys' : ''}`);
        return;
      }
    }
  }

  private showTxnOp(words: readonly Word[]): string[] {
    return words.slice(1).map((w) => {
      const s = this.expand(w);
      return s.startsWith('-') ? s : shellQuote(s);
    });
  }

  private requestOp(op: TxnOp): M.RequestOp {
    switch (op.kind) {
      case 'put':
        return { request: 'request_put', request_put: this.putReq(op) };
      case 'get':
        return { request: 'request_range', request_range: this.getReq(op) };
      case 'del':
        return { request: 'request_delete_range', request_delete_range: this.delReq(op) };
    }
  }

  // -------------------------------------------------------------------------------------------------
  // Watches

  private openWatch(w: WatchState, startRev: number, how: 'watch' | 'resume'): void {
    const call = this.sim.services.watch.watch();
    w.call = call;
    w.state = 'open';
    w.compactRevision = 0;
    const seg: TimelineWatchSegment = { startRev, openedAtRev: this.sim.kv.currentRevision, end: undefined };
    w.segment = seg;
    w.lane.segments.push(seg);
    if (startRev > 0) w.lane.cursor = Math.max(w.lane.cursor, Math.min(startRev - 1, this.sim.kv.currentRevision));
    else w.lane.cursor = Math.max(w.lane.cursor, this.sim.kv.currentRevision);
    call.onEnd((err) => {
      if (w.call !== call) return;
      if (err !== undefined && w.state === 'open') w.state = 'broken';
    });
    call.onResponse((rs) => this.onWatchResponses(w, call, rs));
    if (w.slow) call.pause();
    call.write({ create_request: { ...w.create, start_revision: startRev } });
    const cmd = `watch ${w.display}${startRev !== 0 ? ` --rev=${startRev}` : ''}`;
    this.out(`$ etcdctl ${cmd} &   # ${how === 'watch' ? `watch ${w.name}` : `${w.name} resumed`}, at rev ${this.sim.kv.currentRevision}`);
  }

  private onWatchResponses(w: WatchState, call: WatchCall, rs: M.WatchResponse[]): void {
    if (w.call !== call) return;
    for (const r of rs) {
      const rev = Number(r.header.revision);
      if (r.canceled) {
        this.timeMark();
        const reason = r.cancel_reason !== '' ? r.cancel_reason : r.compact_revision !== '0' ? 'etcdserver: mvcc: required revision has been compacted' : 'etcdserver: watch canceled';
        this.out(`[watch ${w.name}] watch was canceled (${reason})`);
        this.out(`[watch ${w.name}] Error: watch is canceled by the server`);
        w.state = 'canceled';
        w.compactRevision = Number(r.compact_revision);
        if (w.segment !== undefined) w.segment.end = { kind: 'canceled', atRev: Math.max(w.compactRevision, w.lane.cursor), compactRevision: w.compactRevision };
        this.out(`# watch ${w.name}: canceled${w.compactRevision > 0 ? ` with compact_revision ${w.compactRevision}` : ''}; etcdctl exits`);
        call.end();
        return;
      }
      if (r.created) continue;
      if (r.events.length === 0) {
        this.timeMark();
        this.out(`[watch ${w.name}] progress notify: ${rev}`);
        w.progress.push(rev);
        w.lane.progress.push(rev);
        continue;
      }
      this.timeMark();
      for (const ev of r.events) {
        const er = Number(ev.kv.mod_revision);
        for (const l of watchEventLines(ev)) this.out(`[watch ${w.name} @${er}] ${l}`.trimEnd());
        const rec: RecEvent = { type: ev.type, key: str(ev.kv.key), rev: er };
        w.events.push(rec);
        w.lane.events.push(rec);
        w.lane.cursor = Math.max(w.lane.cursor, er);
      }
    }
  }

  private watch(name: string): WatchState {
    const w = this.watches.get(name);
    if (w === undefined) throw new RunError('error', `no watch named ${name} (open it first: watch ${name} KEY ...)`);
    return w;
  }

  // -------------------------------------------------------------------------------------------------
  // Directives

  private directive(d: Directive): void {
    switch (d.kind) {
      case 'note':
        this.out(`## ${d.text}`.trimEnd());
        return;
      case 'advance': {
        const target = this.sim.clock.now() + d.ms;
        this.out(`# advance ${d.raw} → t=${showTime(target)}`);
        this.advanceTarget = target;
        this.sim.advance(d.ms);
        this.advanceTarget = -1;
        this.shownTime = target;
        return;
      }
      case 'capture': {
        let v: string;
        switch (d.what) {
          case 'revision':
            if (this.last.revision === undefined) throw new RunError('error', `${d.name} = revision: the last response (${this.last.what}) has no revision${this.last.error !== undefined ? ` (it failed: ${this.last.error})` : ''}`);
            v = String(this.last.revision);
            break;
          case 'lease':
            if (this.lastLease === undefined) throw new RunError('error', `${d.name} = lease: no lease was granted yet`);
            v = this.lastLease;
            break;
          case 'next_key': {
            const kvs = this.last.range?.kvs ?? [];
            const lastKv = kvs[kvs.length - 1];
            if (lastKv === undefined) throw new RunError('error', `${d.name} = next_key: the last response is not a get with keys`);
            v = `${str(lastKv.key)}\0`;
            break;
          }
          case 'expr':
            v = this.expand(d.expr!);
            break;
        }
        this.vars.set(d.name, v);
        this.out(`# ${d.name} = ${d.what === 'expr' ? d.expr!.raw : d.what} → ${shellQuote(v)}`);
        return;
      }
      case 'repeat': {
        const n = this.int(d.count, 'repeat');
        if (n < 1 || n > 100_000) throw new RunError('error', `repeat: count must be 1..100000, got ${n}`);
        const outputs = new Set<string>();
        const first = this.sim.kv.currentRevision;
        let cmd = '';
        for (let i = 1; i <= n; i++) {
          this.vars.set('i', String(i));
          this.command(d.body, true);
          if (i === 1) cmd = this.showKvCmd(d.body as TxnOp);
          outputs.add(this.last.output.join('\n'));
          this.sim.flush();
        }
        const lastRev = this.sim.kv.currentRevision;
        this.out(`$ etcdctl ${d.raw.replace(/^repeat\s+\S+\s+/, '')}   # repeated ${n} times (i=1..${n}; first: ${cmd})${lastRev !== first ? `, revisions ${first + 1}..${lastRev}` : ''}`);
        for (const o of outputs) this.out(outputs.size === 1 ? `${o}   (×${n})` : o);
        return;
      }
      case 'cancel': {
        const w = this.watch(d.name);
        if (w.state === 'open' && w.call !== undefined) {
          w.state = 'closed';
          if (w.segment !== undefined) w.segment.end = { kind: 'closed', atRev: Math.max(w.lane.cursor, this.sim.kv.currentRevision), compactRevision: 0 };
          w.call.cancel();
        }
        this.out(`# cancel ${d.name}: the client closes its watch (Ctrl-C) at rev ${this.sim.kv.currentRevision}`);
        return;
      }
      case 'break': {
        const w = this.watch(d.name);
        if (w.state !== 'open' || w.call === undefined) throw new RunError('error', `break ${d.name}: the watch is not open (${w.state})`);
        const lost = w.call.pending;
        w.call.abort();
        w.state = 'broken';
        if (w.segment !== undefined) w.segment.end = { kind: 'broken', atRev: w.lane.cursor, compactRevision: 0 };
        const lastEv = w.events[w.events.length - 1];
        this.out(
          `# break ${d.name}: the Watch stream is cut (UNAVAILABLE)${lost > 0 ? `; ${lost} undelivered response${lost === 1 ? '' : 's'} lost with it` : ''}; last event received: ${lastEv === undefined ? 'none' : `${lastEv.type} ${lastEv.key} @${lastEv.rev}`}`,
        );
        return;
      }
      case 'resume': {
        const w = this.watch(d.name);
        if (w.state === 'open') throw new RunError('error', `resume ${d.name}: the watch is still open (break or cancel it first)`);
        this.openWatch(w, this.int(d.rev, 'resume --rev'), 'resume');
        return;
      }
      case 'slow': {
        const w = this.watch(d.name);
        w.slow = true;
        w.call?.pause();
        const ws = this.sim.watchable;
        this.out(
          `# slow ${d.name}: the client stops reading its stream; the server's transport window (${ws.sendWindowBytes} B) fills, ` +
            `then its watch channel (${ws.chanBufLen} responses), then the watcher becomes a victim`,
        );
        return;
      }
      case 'drain': {
        const w = this.watch(d.name);
        w.slow = false;
        const call = w.call;
        const pending = call?.pending ?? 0;
        this.out(`# drain ${d.name}: the client reads again (${pending} response${pending === 1 ? '' : 's'} queued)`);
        call?.resume();
        this.sim.flush();
        return;
      }
      case 'progress': {
        const w = this.watch(d.name);
        if (w.state !== 'open' || w.call === undefined) throw new RunError('error', `progress ${d.name}: the watch is not open (${w.state})`);
        this.out(`# progress ${d.name}: the client sends a WatchProgressRequest on its stream`);
        w.call.write({ progress_request: {} });
        return;
      }
      case 'snapshot': {
        this.snapshots.set(d.name, this.sim.snapshot());
        this.timeline.snapshots.push({ name: d.name, rev: this.sim.kv.currentRevision, line: this.line });
        this.out(`# snapshot ${d.name}: the member's state at revision ${this.sim.kv.currentRevision}`);
        return;
      }
      case 'restore': {
        const snap = this.snapshots.get(d.name);
        if (snap === undefined) throw new RunError('error', `restore ${d.name}: no snapshot named ${d.name} (take one first: snapshot ${d.name})`);
        const from = this.sim.kv.currentRevision;
        this.cause = `restore ${d.name}`;
        this.sim.restore(snap);
        const to = this.sim.kv.currentRevision;
        this.resyncWrites(to);
        this.timeline.restores.push({ name: d.name, fromRev: from, toRev: to, line: this.line });
        this.out(`# restore ${d.name}: this member applies the snapshot as a follower does; revision ${from} → ${to}; its watchers move to unsynced`);
        return;
      }
    }
  }

  /** After a restore the member's history is the snapshot's: drop recorded writes above it, add the snapshot's. */
  private resyncWrites(to: number): void {
    const writes = this.timeline.writes;
    for (let i = writes.length - 1; i >= 0; i--) if (writes[i]!.rev > to) writes.splice(i, 1);
    const have = new Set(writes.map((w) => w.rev));
    for (let r = Math.max(1, this.sim.kv.compactRevision); r <= to; r++) {
      if (have.has(r)) continue;
      for (const ev of this.sim.kv.eventsAt(r)) writes.push({ key: str(ev.kv.key), rev: r, type: ev.type, value: str(ev.kv.value), cause: this.cause });
    }
    writes.sort((a, b) => a.rev - b.rev);
  }

  // -------------------------------------------------------------------------------------------------
  // Expectations

  private expectation(e: Expectation, text: string): void {
    const shown = this.interpolateForDisplay(text);
    const fail = (got: string): never => {
      this.out(`# ${shown}   ✗ got ${got}`);
      throw new RunError('expectation', `${shown}: got ${got}`);
    };
    const cmp = (op: CompareOp, a: number, b: number): boolean =>
      op === '==' ? a === b : op === '!=' ? a !== b : op === '<' ? a < b : op === '<=' ? a <= b : op === '>' ? a > b : a >= b;
    switch (e.kind) {
      case 'ok':
        if (this.last.error !== undefined) fail(`an error: ${this.last.error}`);
        break;
      case 'error': {
        if (this.last.error === undefined) fail(`no error (the last step, ${this.last.what}, succeeded)`);
        if (e.message !== undefined) {
          const want = this.expand(e.message);
          if (this.last.error !== want) fail(`error ${JSON.stringify(this.last.error)}`);
        }
        break;
      }
      case 'revision': {
        if (this.last.revision === undefined) fail(`no revision (the last step, ${this.last.what}, ${this.last.error !== undefined ? `failed: ${this.last.error}` : 'has none'})`);
        if (!cmp(e.op, this.last.revision!, this.int(e.value, 'expect revision'))) fail(`revision ${this.last.revision}`);
        break;
      }
      case 'output': {
        const got = this.last.output.join('\n');
        const want = this.expand(e.text).replace(/\\n/g, '\n');
        if (e.op === '==' ? got !== want : !got.includes(want)) fail(JSON.stringify(got));
        break;
      }
      case 'keys': {
        const r = this.last.range;
        if (r === undefined) fail(`no get response (the last step was ${this.last.what})`);
        const got = r!.kvs.map((kv) => str(kv.key));
        const want = e.keys.map((k) => this.expand(k));
        if (got.join('\u0001') !== want.join('\u0001')) fail(`[${got.join(', ')}]`);
        break;
      }
      case 'more': {
        const r = this.last.range;
        if (r === undefined) fail(`no get response (the last step was ${this.last.what})`);
        if (r!.more !== e.value) fail(`more == ${String(r!.more)}`);
        break;
      }
      case 'count': {
        const r = this.last.range;
        if (r === undefined) fail(`no get response (the last step was ${this.last.what})`);
        if (!cmp(e.op, Number(r!.count), this.int(e.value, 'expect count'))) fail(`count ${r!.count}`);
        break;
      }
      case 'get': {
        const rev = e.rev === undefined ? 0 : this.int(e.rev, 'expect get --rev');
        let r: M.RangeResponse;
        try {
          r = this.sim.services.kv.range({ key: this.bytes(e.key), revision: rev });
        } catch (err) {
          if (!isGrpcError(err)) throw err;
          return fail(`an error: ${err.details}`);
        }
        const kv = r.kvs[0];
        if (e.value === undefined) {
          if (kv !== undefined) fail(`${JSON.stringify(str(kv.value))} (mod_revision ${kv.mod_revision})`);
        } else {
          const want = this.expand(e.value);
          if (kv === undefined) fail('no such key');
          else if (str(kv.value) !== want) fail(JSON.stringify(str(kv.value)));
        }
        break;
      }
      case 'watch-events': {
        const w = this.watch(e.name);
        const got = w.events.map((ev) => `${ev.type} ${ev.key}@${ev.rev}`);
        const want = e.events.map((p) => `${p.type} ${this.expand(p.key)}@${this.int(p.rev, 'event revision')}`);
        if (got.join('\u0001') !== want.join('\u0001')) fail(`[${got.join(', ')}]`);
        break;
      }
      case 'watch-last': {
        const w = this.watch(e.name);
        const lastEv = w.events[w.events.length - 1];
        if (lastEv === undefined) fail('no events');
        if (!cmp(e.op, lastEv!.rev, this.int(e.value, 'expect watch last'))) fail(`last event at ${lastEv!.rev}`);
        break;
      }
      case 'watch-canceled': {
        const w = this.watch(e.name);
        if (w.state !== 'canceled') fail(`the watch is ${w.state}`);
        if (e.compactRevision !== undefined && w.compactRevision !== this.int(e.compactRevision, 'compact_revision')) fail(`compact_revision ${w.compactRevision}`);
        break;
      }
      case 'watch-open': {
        const w = this.watch(e.name);
        if (w.state !== 'open') fail(`the watch is ${w.state}${w.state === 'canceled' ? ` (compact_revision ${w.compactRevision})` : ''}`);
        break;
      }
      case 'watch-progress': {
        const w = this.watch(e.name);
        const lastP = w.progress[w.progress.length - 1];
        if (e.value === undefined) {
          if (lastP !== undefined) fail(`progress notifications at [${w.progress.join(', ')}]`);
        } else if (lastP !== this.int(e.value, 'expect watch progress')) fail(lastP === undefined ? 'no progress notification' : `progress notify ${lastP}`);
        break;
      }
      case 'lease-ttl':
      case 'lease-state': {
        const id = this.leaseId(e.id);
        const t = this.sim.services.lease.leaseTimeToLive({ ID: id });
        const ttl = Number(t.TTL);
        if (e.kind === 'lease-state') {
          const alive = ttl !== -1;
          if ((e.state === 'alive') !== alive) fail(alive ? `alive, TTL remaining ${ttl}s` : 'expired (TTL -1)');
        } else if (!cmp(e.op, ttl, this.int(e.value, 'expect lease ttl'))) fail(`remaining TTL ${ttl}`);
        break;
      }
    }
    this.out(`# ${shown}   ✓`);
  }

  /** The expectation as written, with variables shown by value where they are set. */
  private interpolateForDisplay(text: string): string {
    const body = text.replace(/^\[[A-Za-z0-9_-]+\]\s*/, '');
    try {
      return this.interpolate(body);
    } catch {
      return body;
    }
  }
}
