// What the mutation baseline (docs/mutation/baseline.json, issue #35) means, shared by the script that folds
// StrykerJS reports into it (scripts/mutation-baseline.mjs) and the CI test that holds the engine to it
// (test/properties/mutation.test.ts): how a score is counted, with and without the survivors
// docs/mutation/why.json explains as equivalent, and which mutants of a file a later edit left as they were.
// An edit that only moves lines (an import reshuffle, a comment) changes no mutant: the measured statuses
// carry over to the new lines and nothing needs Stryker; a mutant whose own lines changed, or that is new,
// is what a re-measurement must cover. Types: mutation-lib.d.mts.
import { Instrumenter } from '@stryker-mutator/instrumenter';

/** Stryker's mutation score: detected (killed or timed out) over valid mutants (compile errors and ignored ones do not count). */
export function score(mutants) {
  const detected = mutants.filter((m) => m.status === 'Killed' || m.status === 'Timeout').length;
  const valid = mutants.filter((m) => m.status === 'Killed' || m.status === 'Timeout' || m.status === 'Survived' || m.status === 'NoCoverage').length;
  return { detected, valid };
}

/** why.json's reason for a mutant: by `file:line:mutator`, else by `file:mutator` for a whole kind in a file. */
export function reasonOf(why, file, m) {
  return why[`${file}:${m.line}:${m.mutator}`] ?? why[`${file}:${m.mutator}`];
}

/** Whether why.json explains a mutant as equivalent (or dead code): no behaviour a property could pin down. */
export function isEquivalent(why, file, m) {
  return /^(equivalent|dead code)/.test(reasonOf(why, file, m) ?? '');
}

/**
 * The score with the survivors explained as equivalent (or dead code) left out, so what keeps it below
 * the goal is open work. `pct` is Stryker's own count.
 */
export function scoreWithoutEquivalents(file, mutants, why) {
  const { detected, valid } = score(mutants);
  const equivalent = mutants.filter((m) => (m.status === 'Survived' || m.status === 'NoCoverage') && isEquivalent(why, file, m)).length;
  const rest = valid - equivalent;
  return {
    detected,
    valid,
    equivalent,
    pct: valid === 0 ? undefined : (100 * detected) / valid,
    pctWithoutEquivalents: rest === 0 ? undefined : (100 * detected) / rest,
  };
}

/**
 * Where each line of `before` stands in `after` (1-based; undefined where it was removed or changed), by a
 * longest common subsequence of lines: the sources are at most a few hundred lines, and the common head and
 * tail are matched first, so the table stays small.
 */
export function lineMap(before, after) {
  const a = before.split('\n');
  const b = after.split('\n');
  const map = new Array(a.length).fill(undefined);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) map[head] = ++head;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) {
    map[a.length - 1 - tail] = b.length - tail;
    tail++;
  }
  const n = a.length - head - tail;
  const m = b.length - head - tail;
  // lcs[i][j]: the longest common subsequence of a's middle from i and b's middle from j.
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = a[head + i] === b[head + j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  for (let i = 0, j = 0; i < n && j < m; ) {
    if (a[head + i] === b[head + j]) {
      map[head + i] = head + j + 1;
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) i++;
    else j++;
  }
  return map;
}

const quiet = () => false;
const none = () => {};
const logger = { isTraceEnabled: quiet, isDebugEnabled: quiet, isInfoEnabled: quiet, isWarnEnabled: quiet, isErrorEnabled: quiet, isFatalEnabled: quiet, trace: none, debug: none, info: none, warn: none, error: none, fatal: none };

/**
 * The mutants Stryker would make of a source (its own instrumenter, without running anything: a fraction of
 * a second), in the report's terms: 1-based lines and columns; `ignored` for those under a `Stryker disable`.
 */
export async function mutantsOf(file, source) {
  const r = await new Instrumenter(logger).instrument([{ name: file, mutate: true, content: source }], { plugins: null, excludedMutations: [], ignorers: [] });
  return r.mutants.map((m) => ({
    line: m.location.start.line + 1,
    column: m.location.start.column + 1,
    endLine: m.location.end.line + 1,
    endColumn: m.location.end.column + 1,
    mutator: m.mutatorName,
    replacement: m.replacement,
    ignored: m.status === 'Ignored',
  }));
}

/** The status of a mutant carried over as new or changed: not measured yet, counted nowhere. */
export const PENDING = 'Pending';

const identity = (line, column, endLine, m, ignored) => `${line}:${column}:${endLine}:${m.mutator}:${m.replacement}:${ignored}`;

/**
 * Takes from `candidates` the mutant that is `m` (same place, mutator and replacement). Nested mutants can
 * share a start, an end line, a mutator and a replacement (`a === 0 || b` and `a === 0` both made `false`):
 * the end column tells them apart where both have it (older baselines lack it), else the order, which
 * Stryker's report and its instrumenter share.
 */
function take(candidates, m) {
  const at = (candidates ?? []).findIndex((c) => c.endColumn === undefined || m.endColumn === undefined || c.endColumn === m.endColumn);
  return at < 0 ? undefined : candidates.splice(at, 1)[0];
}

/**
 * A run over part of a file (a line range) merged into the file's measured mutants, the source being the
 * same: each re-measured mutant replaces the one it is, and every other keeps its status. (By identity, not
 * by line: a line range measures only the mutants wholly inside it, so a block that starts on a re-measured
 * line but ends past the range was not measured again, and must not be dropped.)
 */
export function mergeRun(before, run) {
  const byIdentity = new Map();
  for (const m of run) {
    const key = identity(m.line, m.column, m.endLine, m, false);
    byIdentity.set(key, [...(byIdentity.get(key) ?? []), m]);
  }
  const kept = before.filter((m) => take(byIdentity.get(identity(m.line, m.column, m.endLine, m, false)), m) === undefined);
  return [...kept, ...run].sort((x, y) => x.line - y.line || x.column - y.column);
}

/**
 * The measured mutants of `measured.source` carried over to `source`, whose mutants are `current` (from
 * mutantsOf): a mutant carries its status over when every line it spans is unchanged and still adjacent, so
 * its code is the same text. `mutants` are the file's mutants now, each with its measured status, or
 * 'Pending' when it has no measured counterpart (new, or on changed lines); `changed` are the pending ones,
 * what a re-measurement must cover; `lost` are measured mutants no longer there (removed or changed code).
 */
export function carryOver(measured, source, current) {
  const map = lineMap(measured.source, source);
  const byIdentity = new Map();
  const lost = [];
  for (const m of measured.mutants) {
    const from = map[m.line - 1];
    const to = map[m.endLine - 1];
    let same = from !== undefined && to !== undefined && to - from === m.endLine - m.line;
    for (let l = m.line; same && l <= m.endLine; l++) same = map[l - 1] === from + (l - m.line);
    if (!same) {
      lost.push(m);
      continue;
    }
    const key = identity(from, m.column, to, m, m.status === 'Ignored');
    byIdentity.set(key, [...(byIdentity.get(key) ?? []), m]);
  }
  const mutants = [];
  const changed = [];
  for (const c of current) {
    const match = take(byIdentity.get(identity(c.line, c.column, c.endLine, c, c.ignored)), c);
    const status = match?.status ?? (c.ignored ? 'Ignored' : PENDING);
    if (status === PENDING) changed.push(c);
    mutants.push({ line: c.line, column: c.column, endLine: c.endLine, endColumn: c.endColumn, mutator: c.mutator, replacement: c.replacement, status });
  }
  for (const rest of byIdentity.values()) lost.push(...rest);
  return { map, mutants, changed, lost };
}
