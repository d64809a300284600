/**
 * Files of one idea, with a budget: no hand-written source file over 600 lines and no function over 120
 * (a function here is any function, method, accessor, constructor or arrow, nested ones inside it
 * included), so that a new engineer reads a file as one idea and a function as one step. Code that earns
 * more is named below with why; the list shrinks as files are split, and a named exception that no longer
 * needs its room fails too, so the list never outlives its reason. Generated code (src/proto/generated) is
 * not hand-written and not counted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { root, tsFiles } from './source_files.js';

const MAX_FILE_LINES = 600;
const MAX_FUNCTION_LINES = 120;

/**
 * Files allowed over 600 lines, and why. "To split" ones are to be split by the idea named and leave the
 * list then; the file budget holds for tests, benches and scripts too (a test file is read as one idea as much
 * as a source file), the function budget for src/ only (a test's steps read top to bottom).
 */
const FILE_EXCEPTIONS: ReadonlyMap<string, string> = new Map([
  ['src/h2/connection.ts', 'one HTTP/2 connection: the frame loop, flow control and stream states are one dense hot structure'],
  ['test/properties/mvcc.property.test.ts', 'to split: one model (commands, reference, checks) for now; split by idea — ranges, compaction, txns — sharing the command set'],
  ['test/properties/wire_fuzz.property.test.ts', 'to split: the junk generators (wrong wire types, truncations, long varints) into their own module beside the property'],
  ['test/properties/front_door_delivery.property.test.ts', 'to split: the in-process door and the served door are two properties sharing one consumer model'],
  ['test/properties/lease.property.test.ts', 'to split: the reference lessor into test/properties/model/, as the KV reference is'],
  ['test/properties/watch_guarantees.property.test.ts', 'to split: the follower modes (in step, lagging, restored) into a model module beside the property'],
  ['test/properties/model/reference_kv.ts', "a naive reference of etcd's whole KV (put, delete, txn, range options, compaction's keep rule): one model, kept whole so that it is read as one"],
  ['test/http/endpoints.test.ts', 'to split: the differential against etcd (shared members) and the tests that start members of their own (TLS, profiles, gateway lifetimes)'],
  ['test/cluster/served.test.ts', 'to split: etcdctl against the served cluster and the fault levers of its control endpoint'],
  ['test/clients/harness.ts', "to split: the normaliser of what etcd leaves free into its own module beside the harness"],
  ['test/raft/sim_network.ts', 'the simulated network, disks and members of the Raft tests: one harness whose parts share the virtual clock and the message queue'],
  ['test/raft/step_rules.ts', "to split: etcd's raft step guarantees by kind (election, replication, reads), as flow_rules.ts and read_rules.ts already are"],
  ['bench/delivery.bench.ts', 'to split: the in-process and the served delivery rows share the etcd baseline but not their drivers'],
]);

/** Functions allowed over 120 lines (file: name), and why. None today: a function over 120 lines is split. */
const FUNCTION_EXCEPTIONS: ReadonlyMap<string, string> = new Map<string, string>([]);

/** Every .ts file under `dirs`, as paths relative to the repository. */
function sources(dirs: readonly string[] = ['src']): string[] {
  return dirs.flatMap((d) => tsFiles(join(root, d))).map((p) => relative(root, p).split('\\').join('/')).sort();
}

function lineCount(text: string): number {
  return text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
}

/** A function's name as a reader finds it: `Class.method`, `name`, or the variable an arrow is bound to. */
function nameOf(node: ts.Node): string {
  const parts: string[] = [];
  for (let n: ts.Node | undefined = node; n !== undefined; n = n.parent) {
    if (ts.isFunctionDeclaration(n) || ts.isClassDeclaration(n) || ts.isMethodDeclaration(n) || ts.isGetAccessor(n) || ts.isSetAccessor(n) || ts.isPropertyAssignment(n) || ts.isPropertyDeclaration(n)) {
      if (n.name !== undefined) parts.unshift(n.name.getText());
    } else if (ts.isVariableDeclaration(n)) parts.unshift(n.name.getText());
    else if (ts.isConstructorDeclaration(n)) parts.unshift('constructor');
  }
  return parts.join('.') || '(anonymous)';
}

/** Functions of `file` over the budget: `name` -> lines. */
function longFunctions(file: string): Map<string, number> {
  const text = readFileSync(join(root, file), 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const long = new Map<string, number>();
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = end - start + 1;
      if (lines > MAX_FUNCTION_LINES) long.set(nameOf(node), Math.max(lines, long.get(nameOf(node)) ?? 0));
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return long;
}

test(`no hand-written TypeScript file over ${MAX_FILE_LINES} lines, except the named ones`, () => {
  const over: string[] = [];
  const files = sources(['src', 'test', 'bench', 'scripts']);
  for (const f of files) {
    const n = lineCount(readFileSync(join(root, f), 'utf8'));
    if (n > MAX_FILE_LINES && !FILE_EXCEPTIONS.has(f)) over.push(`${f}: ${n} lines`);
    if (n <= MAX_FILE_LINES && FILE_EXCEPTIONS.has(f)) over.push(`${f} is named an exception but has ${n} lines: take it off the list`);
  }
  for (const f of FILE_EXCEPTIONS.keys()) if (!files.includes(f)) over.push(`${f} is named an exception but does not exist: take it off the list`);
  assert.deepEqual(over, []);
});

test(`no function over ${MAX_FUNCTION_LINES} lines, except the named ones`, () => {
  const over: string[] = [];
  const named = new Set(FUNCTION_EXCEPTIONS.keys());
  for (const f of sources()) {
    for (const [name, lines] of longFunctions(f)) {
      const key = `${f}: ${name}`;
      if (named.delete(key)) continue;
      over.push(`${key} (${lines} lines)`);
    }
  }
  for (const key of named) over.push(`${key} is named an exception but is within the budget (or gone): take it off the list`);
  assert.deepEqual(over, []);
});
