/**
 * Checks the expectations of a script against what etcd answered and delivered: the last response
 * (ok or error, header revision, etcdctl's output, a get's keys / more / count), a key read at a revision
 * through the KV service, what a named watch received (events, last revision, cancelation and its
 * compact_revision, progress notifications), and a lease's TTL read through LeaseTimeToLive. Each writes
 * `# expect ...   ✓` or `✗ got ...` into the transcript.
 */
import { isClientLog } from './calls.js';
import { isGrpcError } from '../../server/index.js';
import type * as M from '../../server/messages.js';
import { str } from '../format.js';
import type { CompareOp, Expectation } from '../parse/expectations.js';
import { RunError } from '../run_error.js';
import type { RunContext } from './context.js';
import { bytes, leaseId } from './requests.js';
import type { RunState } from './state.js';
import type { WatchState } from './watches.js';

/** What a check of one expectation kind works with: the run, and how it reports what it found instead. */
interface Check {
  readonly ctx: RunContext;
  readonly s: RunState;
  /** Stops the run at this expectation, showing what was found. */
  fail(got: string): never;
  /** A watch expectation that failed: a watch opened behind the head with no time since gets a hint. */
  failWatch(w: WatchState, got: string): never;
  /** The last get's response, or the failure that there is none. */
  lastRange(): M.RangeResponse;
}

const cmp = (op: CompareOp, a: number, b: number): boolean =>
  op === '==' ? a === b : op === '!=' ? a !== b : op === '<' ? a < b : op === '<=' ? a <= b : op === '>' ? a > b : a >= b;

type Checker<K extends Expectation['kind']> = (c: Check, e: Extract<Expectation, { kind: K }>) => void;

function checkLease({ ctx, s, fail }: Check, e: Extract<Expectation, { kind: 'lease-ttl' | 'lease-state' }>): void {
  const id = leaseId(s.vars, e.id);
  // The lessor that decides (on a cluster the leader's), read at once.
  const t = (ctx.cluster?.leaseServer() ?? s.sim.server).services.lease.leaseTimeToLive({ ID: id }, s.ctx());
  const ttl = Number(t.TTL);
  if (e.kind === 'lease-state') {
    const alive = ttl !== -1;
    if ((e.state === 'alive') !== alive) fail(alive ? `alive, TTL remaining ${ttl}s` : 'expired (TTL -1)');
  } else if (!cmp(e.op, ttl, s.vars.int(e.value, 'expect lease ttl'))) fail(`remaining TTL ${ttl}`);
}

function checkMembers({ ctx, s, fail }: Check, e: Extract<Expectation, { kind: 'leader' | 'member' | 'member-role' }>): void {
  // The parser admits these only on a cluster.
  const got = ctx.cluster!.check(e, (w) => s.vars.int(w, `expect ${e.kind}`));
  if (got !== undefined) fail(got);
}

function checkGet({ s, fail }: Check, e: Extract<Expectation, { kind: 'get' }>): void {
  const rev = e.rev === undefined ? 0 : s.vars.int(e.rev, 'expect get --rev');
  let r: M.RangeResponse;
  try {
    // The member's own state, at once (on a cluster: the current member's, without Raft or time moving).
    r = s.sim.server.services.kv.range({ key: bytes(s.vars, e.key), revision: rev }, s.ctx());
  } catch (err) {
    if (!isGrpcError(err)) throw err;
    return fail(`an error: ${err.details}`);
  }
  const kv = r.kvs[0];
  if (e.value === undefined) {
    if (kv !== undefined) fail(`${JSON.stringify(str(kv.value))} (mod_revision ${kv.mod_revision})`);
  } else {
    const want = s.vars.expand(e.value);
    if (kv === undefined) fail('no such key');
    else if (str(kv.value) !== want) fail(JSON.stringify(str(kv.value)));
  }
}

/** The check of each expectation kind (a kind without one does not compile). */
const CHECKS: { readonly [K in Expectation['kind']]: Checker<K> } = {
  ok: ({ s, fail }) => {
    if (s.last.error !== undefined) fail(`an error: ${s.last.error}`);
  },
  error: ({ s, fail }, e) => {
    if (s.last.error === undefined) fail(`no error (the last step, ${s.last.what}, succeeded)`);
    if (e.message !== undefined && s.last.error !== s.vars.expand(e.message)) fail(`error ${JSON.stringify(s.last.error)}`);
  },
  revision: ({ s, fail }, e) => {
    if (s.last.revision === undefined) fail(`no revision (the last step, ${s.last.what}, ${s.last.error !== undefined ? `failed: ${s.last.error}` : 'has none'})`);
    if (!cmp(e.op, s.last.revision!, s.vars.int(e.value, 'expect revision'))) fail(`revision ${s.last.revision}`);
  },
  output: ({ s, fail }, e) => {
    const got = s.last.output.filter((l) => !isClientLog(l)).join('\n');
    const want = s.vars.expand(e.text).replace(/\\n/g, '\n');
    if (e.op === '==' ? got !== want : !got.includes(want)) fail(JSON.stringify(got));
  },
  keys: ({ s, fail, lastRange }, e) => {
    const got = lastRange().kvs.map((kv) => str(kv.key));
    const want = e.keys.map((k) => s.vars.expand(k));
    if (got.join('\u0001') !== want.join('\u0001')) fail(`[${got.join(', ')}]`);
  },
  more: ({ fail, lastRange }, e) => {
    const r = lastRange();
    if (r.more !== e.value) fail(`more == ${String(r.more)}`);
  },
  count: ({ s, fail, lastRange }, e) => {
    const r = lastRange();
    if (!cmp(e.op, Number(r.count), s.vars.int(e.value, 'expect count'))) fail(`count ${r.count}`);
  },
  get: checkGet,
  'watch-events': ({ ctx, s, failWatch }, e) => {
    const w = ctx.watches.get(e.name);
    const got = w.events.map((ev) => `${ev.type} ${ev.key}@${ev.rev}`);
    const want = e.events.map((p) => `${p.type} ${s.vars.expand(p.key)}@${s.vars.int(p.rev, 'event revision')}`);
    if (got.join('\u0001') !== want.join('\u0001')) failWatch(w, `[${got.join(', ')}]`);
  },
  'watch-last': ({ ctx, s, failWatch }, e) => {
    const w = ctx.watches.get(e.name);
    const lastEv = w.events[w.events.length - 1];
    if (lastEv === undefined) failWatch(w, 'no events');
    if (!cmp(e.op, lastEv!.rev, s.vars.int(e.value, 'expect watch last'))) failWatch(w, `last event at ${lastEv!.rev}`);
  },
  'watch-count': ({ ctx, s, failWatch }, e) => {
    // Every event received, over all of the watch's streams (a resumed stream's replay counts again).
    const w = ctx.watches.get(e.name);
    if (!cmp(e.op, w.events.length, s.vars.int(e.value, 'expect watch count'))) failWatch(w, `${w.events.length} events`);
  },
  'watch-responses': ({ ctx, s, failWatch }, e) => {
    // Responses that carried events, as they came off the wire: each fragment is one.
    const w = ctx.watches.get(e.name);
    if (!cmp(e.op, w.responses, s.vars.int(e.value, 'expect watch responses'))) failWatch(w, `${w.responses} responses`);
  },
  'watch-canceled': ({ ctx, s, fail }, e) => {
    const w = ctx.watches.get(e.name);
    if (w.state !== 'canceled') fail(`the watch is ${w.state}`);
    if (e.compactRevision !== undefined && w.compactRevision !== s.vars.int(e.compactRevision, 'compact_revision')) fail(`compact_revision ${w.compactRevision}`);
  },
  'watch-open': ({ ctx, fail }, e) => {
    const w = ctx.watches.get(e.name);
    if (w.state !== 'open') fail(`the watch is ${w.state}${w.state === 'canceled' ? ` (compact_revision ${w.compactRevision})` : ''}`);
  },
  'watch-progress': ({ ctx, s, fail }, e) => {
    const w = ctx.watches.get(e.name);
    const lastP = w.progress[w.progress.length - 1];
    if (e.value === undefined) {
      if (lastP !== undefined) fail(`progress notifications at [${w.progress.join(', ')}]`);
    } else if (lastP !== s.vars.int(e.value, 'expect watch progress')) fail(lastP === undefined ? 'no progress notification' : `progress notify ${lastP}`);
  },
  'lease-ttl': checkLease,
  'lease-state': checkLease,
  leader: checkMembers,
  member: checkMembers,
  'member-role': checkMembers,
};

/** Checks `e` (its line as written: `text`); a failure is shown with what was found and stops the run. */
export function checkExpectation(ctx: RunContext, e: Expectation, text: string): void {
  const s = ctx.state;
  const shown = displayed(s, text);
  const fail = (got: string): never => {
    s.out(`# ${shown}   ✗ got ${got}`);
    throw new RunError('expectation', `${shown}: got ${got}`);
  };
  const check: Check = {
    ctx,
    s,
    fail,
    failWatch: (w, got) =>
      fail(
        w.behind && w.state === 'open' && s.sim.clock.now() === w.openedAtMs
          ? `${got} (hint: ${w.name} started behind the head at --rev; its history is replayed by the 100 ms sync step, which runs only when time moves: add advance 100ms after opening it)`
          : got,
      ),
    lastRange: () => s.last.range ?? fail(`no get response (the last step was ${s.last.what})`),
  };
  // CHECKS[e.kind] takes e's own kind; TypeScript cannot tie the two through the lookup.
  (CHECKS[e.kind] as (c: Check, e: Expectation) => void)(check, e);
  s.out(`# ${shown}   ✓`);
}

/** The expectation as written, with variables shown by value where they are set. */
function displayed(s: RunState, text: string): string {
  const body = text.replace(/^\[[A-Za-z0-9_-]+\]\s*/, '');
  try {
    return s.vars.interpolate(body);
  } catch {
    return body;
  }
}
