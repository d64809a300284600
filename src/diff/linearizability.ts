/**
 * A linearizability checker for etcd KV histories: what etcd promises for linearizable reads and for writes
 * (every request takes effect at one instant between its call and its answer, in one total order that
 * real time respects), checked on a history recorded by concurrent clients against a real cluster or the
 * simulator.
 *
 * The algorithm is Wing & Gong's search as refined by Lowe ("WGL"): walk the history's call and return
 * events in time order, linearize a pending operation when the model allows it, backtrack when an
 * operation's return is reached before it could be placed, and remember every (set of linearized
 * operations, state) pair already explored so no configuration is searched twice. Every operation here
 * touches one key, and the keys of an etcd keyspace are independent registers, so the history is split by
 * key and each part is checked on its own (P-compositionality: a history is linearizable iff each key's
 * part is) — which keeps the search small.
 *
 * Operations: put, a linearizable get (Range with serializable=false), delete of one key, and a
 * compare-and-swap txn on one key (compare the value, or create_revision = 0 for "absent"; then put).
 * A write whose answer never came (a deadline, a dropped connection, a member that was killed) has an
 * unknown outcome: it may have been applied at any instant after its call, or never — as etcd leaves it.
 * A read without an answer says nothing and is left out.
 *
 * Keys and values are latin1 strings (one char per byte), as in the differential's ops (ops.ts).
 */

/** When an operation was called and when its answer arrived (any monotonic unit), or 'unknown'. */
interface Timing {
  /** Which client issued it (shown in reports; the checker does not need it). */
  readonly client: number;
  readonly key: string;
  readonly invoke: number;
  /** When the answer arrived; 'unknown' for a write whose outcome is unknown (it may or may not apply). */
  readonly ret: number | 'unknown';
}

/** Put: etcd's Put of one key (the answer carries nothing the register model needs). */
export interface PutOperation extends Timing {
  readonly type: 'put';
  readonly value: string;
}

/** A linearizable Range of one key: the value it saw, null when the key was absent. */
export interface GetOperation extends Timing {
  readonly type: 'get';
  readonly value: string | null;
}

/** DeleteRange of one key: `deleted` is the response's count (undefined when the outcome is unknown). */
export interface DeleteOperation extends Timing {
  readonly type: 'delete';
  readonly deleted?: number | undefined;
}

/**
 * A txn on one key: if value(key) == expect (expect null: create_revision(key) == 0, i.e. absent) then
 * put value. `succeeded` is the response's flag (undefined when the outcome is unknown). A VALUE compare
 * on an absent key is false in etcd, so expect "" does not match an absent key.
 */
export interface CasOperation extends Timing {
  readonly type: 'cas';
  readonly expect: string | null;
  readonly value: string;
  readonly succeeded?: boolean | undefined;
}

/** One operation of a KV history. */
export type KvOperation = PutOperation | GetOperation | DeleteOperation | CasOperation;

/** The register state of one key: its value, or null while it does not exist. */
type State = string | null;

/** The checker's verdict on a history. */
export type LinearizabilityResult =
  | { readonly verdict: 'linearizable'; readonly keys: number; readonly operations: number }
  | {
      readonly verdict: 'not-linearizable';
      /** The first key (in byte order) whose part has no linearization. */
      readonly key: string;
      /** Every key whose part has none. */
      readonly keys: readonly string[];
      /**
       * A small sub-history of that key that still has no linearization, and a genuine one: no history
       * between it and the whole one has a linearization either (see removable()).
       */
      readonly minimal: readonly KvOperation[];
      /** The minimal sub-history as a timeline, for a failure message. */
      readonly text: string;
    }
  | { readonly verdict: 'gave-up'; readonly key: string; readonly steps: number };

export interface CheckOptions {
  /** Search steps per key before giving up (default 2,000,000). */
  readonly maxSteps?: number | undefined;
  /** Search steps spent on shrinking a failing key's part (default 2,000,000). */
  readonly maxShrinkSteps?: number | undefined;
}

// ---------------------------------------------------------------------------------------------------
// The model: one key as a register with etcd's answers

function unknown(op: KvOperation): boolean {
  return op.ret === 'unknown';
}

/** The state after `op` from `s`, or undefined when its answer is impossible from `s`. */
export function step(s: State, op: KvOperation): State | undefined {
  switch (op.type) {
    case 'put':
      return op.value;
    case 'get':
      return s === op.value ? s : undefined;
    case 'delete':
      if (op.deleted === undefined || unknown(op)) return null;
      return op.deleted === (s === null ? 0 : 1) ? null : undefined;
    case 'cas': {
      const holds = s === op.expect;
      if (op.succeeded === undefined || unknown(op)) return holds ? op.value : s;
      if (op.succeeded !== holds) return undefined;
      return holds ? op.value : s;
    }
  }
}

/** An operation whose effect does not depend on the state it applies to (a blind write). */
function blind(op: KvOperation): boolean {
  return op.type === 'put' || (op.type === 'delete' && (unknown(op) || op.deleted === undefined));
}

/** An operation that never changes the state, whatever it saw: removing it cannot hide a violation. */
function observation(op: KvOperation): boolean {
  if (op.type === 'get') return true;
  if (unknown(op)) return false;
  if (op.type === 'cas') return op.succeeded === false;
  if (op.type === 'delete') return op.deleted === 0;
  return false;
}

/** The states a write may leave behind (for a conditional one: when it applies). */
function writes(op: KvOperation): State[] {
  switch (op.type) {
    case 'put':
      return [op.value];
    case 'delete':
      return [null];
    case 'cas':
      return [op.value];
    case 'get':
      return [];
  }
}

// ---------------------------------------------------------------------------------------------------
// WGL search on one key

interface Entry {
  readonly op: number;
  readonly call: boolean;
  match: Entry | undefined;
  prev: Entry | undefined;
  next: Entry | undefined;
}

type Search = { ok: true; steps: number } | { ok: false; steps: number } | { ok: 'gave-up'; steps: number };

function endOf(op: KvOperation): number {
  return op.ret === 'unknown' ? Number.POSITIVE_INFINITY : op.ret;
}

/** Whether `ops` (one key, reads without answers already left out) has a linearization. */
function search(ops: readonly KvOperation[], maxSteps: number): Search {
  const n = ops.length;
  const events: Entry[] = [];
  for (let i = 0; i < n; i++) {
    const call: Entry = { op: i, call: true, match: undefined, prev: undefined, next: undefined };
    const ret: Entry = { op: i, call: false, match: undefined, prev: undefined, next: undefined };
    call.match = ret;
    events.push(call, ret);
  }
  const time = (e: Entry): number => (e.call ? ops[e.op]!.invoke : endOf(ops[e.op]!));
  // Time order; at equal times calls first, so touching operations count as concurrent (a precedes b
  // only when a's answer came strictly before b's call).
  events.sort((x, y) => time(x) - time(y) || (x.call === y.call ? x.op - y.op : x.call ? -1 : 1));
  const head: Entry = { op: -1, call: false, match: undefined, prev: undefined, next: undefined };
  let last = head;
  for (const e of events) {
    last.next = e;
    e.prev = last;
    last = e;
  }
  let knownLeft = ops.filter((o) => !unknown(o)).length;
  const words = Math.max(1, Math.ceil(n / 32));
  const bits = new Uint32Array(words);
  const seen = new Set<string>();
  const stack: Array<{ entry: Entry; state: State }> = [];
  let state: State = null;
  let entry = head.next;
  let steps = 0;

  const lift = (e: Entry): void => {
    e.prev!.next = e.next;
    if (e.next !== undefined) e.next.prev = e.prev;
    const m = e.match!;
    m.prev!.next = m.next;
    if (m.next !== undefined) m.next.prev = m.prev;
  };
  const unlift = (e: Entry): void => {
    const m = e.match!;
    m.prev!.next = m;
    if (m.next !== undefined) m.next.prev = m;
    e.prev!.next = e;
    if (e.next !== undefined) e.next.prev = e;
  };

  while (knownLeft > 0) {
    if (++steps > maxSteps) return { ok: 'gave-up', steps };
    if (entry === undefined) return { ok: false, steps }; // cannot happen while a known op is left
    if (entry.call) {
      const op = ops[entry.op]!;
      const next = step(state, op);
      if (next !== undefined) {
        bits[entry.op >>> 5]! ^= 1 << (entry.op & 31);
        const key = `${bits.join(',')}|${next === null ? '\u0000absent' : `=${next}`}`;
        if (!seen.has(key)) {
          seen.add(key);
          stack.push({ entry, state });
          state = next;
          if (!unknown(op)) knownLeft--;
          lift(entry);
          entry = head.next;
          continue;
        }
        bits[entry.op >>> 5]! ^= 1 << (entry.op & 31);
      }
      entry = entry.next;
    } else {
      // An operation's answer came and it could not be placed before it: undo the last choice.
      const top = stack.pop();
      if (top === undefined) return { ok: false, steps };
      state = top.state;
      const op = ops[top.entry.op]!;
      if (!unknown(op)) knownLeft++;
      bits[top.entry.op >>> 5]! ^= 1 << (top.entry.op & 31);
      unlift(top.entry);
      entry = top.entry.next;
    }
  }
  return { ok: true, steps };
}

// ---------------------------------------------------------------------------------------------------
// Shrinking a failing key's part

/**
 * Whether the operations `remove` can be left out of `ops` together while what remains stays a genuine
 * witness: if the remaining sub-history S has no linearization, then no history between S and the whole
 * one has any — adding back any of the operations left out cannot explain what S shows. Observations never
 * change the state, so leaving them out only drops constraints. A write W may go when no remaining
 * operation O could have seen the state W leaves: O's answer is impossible from that state, or O is a
 * blind write, or O finished before W was called, or O's outcome is unknown and it would change nothing
 * there (it can as well be linearized last). Then in any linearization the state each remaining
 * non-blind operation sees was left by a remaining write (or is the initial absence).
 */
function removable(ops: readonly KvOperation[], remove: ReadonlySet<number>): boolean {
  for (const i of remove) {
    for (const j of seers(ops, i)) if (!remove.has(j)) return false;
  }
  return true;
}

/** The operations of `ops` that could have seen the state `ops[i]` leaves (none for an observation). */
function seers(ops: readonly KvOperation[], i: number): number[] {
  const w = ops[i]!;
  if (observation(w)) return [];
  const out: number[] = [];
  for (let j = 0; j < ops.length; j++) {
    if (j === i) continue;
    const o = ops[j]!;
    if (blind(o) || endOf(o) < w.invoke) continue;
    for (const state of writes(w)) {
      const after = step(state, o);
      // An unknown-outcome op that would change nothing from this state can be linearized last instead.
      if (after !== undefined && !(unknown(o) && after === state)) {
        out.push(j);
        break;
      }
    }
  }
  return out;
}

/**
 * A small sub-history of a non-linearizable key history that is still non-linearizable, by delta
 * debugging: leave out an operation together with every operation that could have seen it, then ever
 * smaller contiguous chunks (by call time) of operations — observations first, then any — while the rest
 * stays non-linearizable and the chunk is removable (above), until no single operation can go.
 */
function shrink(ops: readonly KvOperation[], maxSteps: number): KvOperation[] {
  let cur = [...ops].sort((a, b) => a.invoke - b.invoke);
  let budget = maxSteps;
  const attempt = (remove: ReadonlySet<number>): boolean => {
    if (!removable(cur, remove)) return false;
    const candidate = cur.filter((_, j) => !remove.has(j));
    const r = search(candidate, budget);
    budget -= r.steps;
    if (r.ok !== false) return false;
    cur = candidate;
    return true;
  };
  const phases: Array<(op: KvOperation) => boolean> = [observation, () => true];
  for (let changed = true; changed && budget > 0; ) {
    changed = false;
    // Writes that see each other's states (a delete and an "if absent" txn after it) go together: an
    // operation with every operation that could have seen it, transitively, latest first.
    for (let i = cur.length - 1; i >= 0 && budget > 0; i--) {
      const closure = new Set([i]);
      const todo = [i];
      while (todo.length > 0) {
        for (const j of seers(cur, todo.pop()!)) {
          if (!closure.has(j)) {
            closure.add(j);
            todo.push(j);
          }
        }
      }
      if (closure.size > 1 && closure.size < cur.length && attempt(closure)) {
        changed = true;
        i = cur.length;
      }
    }
    for (const eligible of phases) {
      let n = 2;
      while (budget > 0) {
        const candidates = cur.flatMap((op, j) => (eligible(op) ? [j] : []));
        if (candidates.length === 0) break;
        n = Math.min(n, candidates.length);
        let removed = false;
        for (let c = n - 1; c >= 0 && !removed; c--) {
          const chunk = candidates.slice(Math.floor((c * candidates.length) / n), Math.floor(((c + 1) * candidates.length) / n));
          removed = chunk.length > 0 && attempt(new Set(chunk));
        }
        if (removed) {
          changed = true;
          n = Math.max(2, n - 1);
        } else if (n >= candidates.length) {
          break;
        } else {
          n = Math.min(candidates.length, n * 2);
        }
      }
    }
  }
  return cur;
}

// ---------------------------------------------------------------------------------------------------
// Reports

function show(v: string | null): string {
  return v === null ? '(absent)' : JSON.stringify(v);
}

/** One operation as text: `put "k" "v" -> ok`. */
export function describeOperation(op: KvOperation): string {
  const k = JSON.stringify(op.key);
  const u = unknown(op);
  switch (op.type) {
    case 'put':
      return `put ${k} ${show(op.value)} -> ${u ? 'unknown outcome' : 'ok'}`;
    case 'get':
      return `get ${k} -> ${show(op.value)}`;
    case 'delete':
      return `delete ${k} -> ${u || op.deleted === undefined ? 'unknown outcome' : `deleted ${op.deleted}`}`;
    case 'cas':
      return `txn if ${k} ${op.expect === null ? 'is absent' : `= ${show(op.expect)}`} then put ${show(op.value)} -> ${u || op.succeeded === undefined ? 'unknown outcome' : op.succeeded ? 'succeeded' : 'failed'}`;
  }
}

/** A sub-history as a timeline, one operation per line in call order. */
export function formatHistory(ops: readonly KvOperation[]): string {
  const sorted = [...ops].sort((a, b) => a.invoke - b.invoke);
  const t0 = sorted[0]?.invoke ?? 0;
  const fmt = (t: number): string => (t - t0).toFixed(3).padStart(10);
  return sorted
    .map((o) => `  client ${String(o.client).padEnd(3)} [${fmt(o.invoke)} .. ${o.ret === 'unknown' ? '         ?' : fmt(o.ret)}]  ${describeOperation(o)}`)
    .join('\n');
}

// ---------------------------------------------------------------------------------------------------

/** The operations the checker takes into account: a read without an answer says nothing. */
function relevant(op: KvOperation): boolean {
  return !(op.type === 'get' && unknown(op));
}

/**
 * Checks that a KV history is linearizable (etcd's guarantee for writes and linearizable reads). On
 * failure the result carries a minimal failing sub-history of one key and its timeline as text.
 */
export function checkLinearizable(history: readonly KvOperation[], opts: CheckOptions = {}): LinearizabilityResult {
  const maxSteps = opts.maxSteps ?? 2_000_000;
  const byKey = new Map<string, KvOperation[]>();
  let operations = 0;
  for (const op of history) {
    if (!(op.ret === 'unknown' || op.ret >= op.invoke)) throw new RangeError(`an operation returned before it was called: ${describeOperation(op)}`);
    if (!relevant(op)) continue;
    operations++;
    const part = byKey.get(op.key) ?? [];
    part.push(op);
    byKey.set(op.key, part);
  }
  const keys = [...byKey.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const failing: string[] = [];
  for (const key of keys) {
    const r = search(byKey.get(key)!, maxSteps);
    if (r.ok === 'gave-up') return { verdict: 'gave-up', key, steps: r.steps };
    if (!r.ok) failing.push(key);
  }
  if (failing.length === 0) return { verdict: 'linearizable', keys: keys.length, operations };
  const key = failing[0]!;
  const minimal = shrink(byKey.get(key)!, opts.maxShrinkSteps ?? 2_000_000);
  const text = [
    `not linearizable: key ${JSON.stringify(key)}${failing.length > 1 ? ` (and ${failing.length - 1} more: ${failing.slice(1, 6).map((k) => JSON.stringify(k)).join(', ')})` : ''}; ` +
      `no order of these ${minimal.length} operations respects both real time and the answers (times relative to the first call):`,
    formatHistory(minimal),
  ].join('\n');
  return { verdict: 'not-linearizable', key, keys: failing, minimal, text };
}
