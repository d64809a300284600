/**
 * src/server/messages.ts derives etcd's message types from src/proto/generated, which proto-loader-gen-types
 * writes from the protos in src/proto (scripts/gen-types.mjs, `npm run gen-types`). These tests keep
 * the checked-in output fresh: they regenerate into a temporary folder and fail, naming the files, when a
 * .proto, the generator or its flags changed without the output being regenerated; and they hold the flags
 * to the options src/proto's loader reads the protos with, so the types describe what the handlers really receive.
 * The last test pins, at compile time (npm run typecheck), where messages.ts departs from the generated
 * form on purpose.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROTO_FILES, PROTO_LOADER_OPTIONS } from '../../src/proto/index.js';
import type * as M from '../../src/server/messages.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const checkedIn = join(root, 'src', 'proto', 'generated');
const script = join(root, 'scripts', 'gen-types.mjs');
const REGENERATE = 'run `npm run gen-types` and commit src/proto/generated';

/** Every file under `dir`, as sorted '/'-separated paths relative to it. */
function filesUnder(dir: string, sub = ''): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(dir, sub), { withFileTypes: true })) {
    const path = sub === '' ? entry.name : `${sub}/${entry.name}`;
    if (entry.isDirectory()) out.push(...filesUnder(dir, path));
    else out.push(path);
  }
  return out.sort();
}

/** The first line where two texts differ, as "line N: checked in «a» / generated «b»". */
function firstDifference(a: string, b: string): string {
  const al = a.split('\n');
  const bl = b.split('\n');
  for (let i = 0; i < Math.max(al.length, bl.length); i++) {
    if (al[i] !== bl[i]) return `line ${i + 1}: checked in ${JSON.stringify(al[i] ?? '<end>')} / generated ${JSON.stringify(bl[i] ?? '<end>')}`;
  }
  return 'identical';
}

test(`src/proto/generated is what gen-types makes of src/proto today (else: ${REGENERATE})`, () => {
  const fresh = mkdtempSync(join(tmpdir(), 'etcdsim-gen-types-'));
  try {
    const run = spawnSync(process.execPath, [script, '--out-dir', fresh], { cwd: root, encoding: 'utf8', timeout: 120_000 });
    assert.equal(run.error, undefined, `scripts/gen-types.mjs did not run: ${String(run.error)}`);
    assert.equal(run.status, 0, `scripts/gen-types.mjs failed:\n${run.stdout}\n${run.stderr}`);

    const want = filesUnder(fresh);
    const have = filesUnder(checkedIn);
    const problems: string[] = [];
    for (const f of want.filter((f) => !have.includes(f))) problems.push(`missing: ${f}`);
    for (const f of have.filter((f) => !want.includes(f))) problems.push(`not generated any more: ${f}`);
    for (const f of want.filter((f) => have.includes(f))) {
      const a = readFileSync(join(checkedIn, f), 'utf8');
      const b = readFileSync(join(fresh, f), 'utf8');
      if (a !== b) problems.push(`stale: ${f} (${firstDifference(a, b)})`);
    }
    assert.ok(want.includes('index.ts') && want.includes('etcdserverpb/RangeRequest.ts'), `gen-types wrote an unexpected tree: ${want.slice(0, 10).join(', ')}`);
    assert.deepEqual(problems, [], `src/proto/generated is stale: ${REGENERATE}.\n${problems.join('\n')}`);
  } finally {
    rmSync(fresh, { recursive: true, force: true });
  }
});

test("gen-types' flags and files are the proto-loader options and files src/proto loads", async () => {
  // A path in a variable: the script is plain JavaScript without declarations, only its flags are read.
  const path = script;
  const { GEN_FLAGS, PROTO_FILES: GEN_FILES } = (await import(path)) as { GEN_FLAGS: readonly string[]; PROTO_FILES: readonly string[] };
  // Every option but the include path, spelled as proto-loader-gen-types' flag for it: an option added to
  // PROTO_LOADER_OPTIONS (bytes: String, say) fails here until gen-types passes it too.
  const { includeDirs: _includeDirs, ...options } = PROTO_LOADER_OPTIONS;
  const asFlags = Object.entries(options).map(([k, v]) => (v === true ? `--${k}` : typeof v === 'function' ? `--${k}=${v.name}` : `--${k}=${String(v)}`));
  assert.deepEqual([...GEN_FLAGS].sort(), asFlags.sort(), 'scripts/gen-types.mjs GEN_FLAGS must mirror src/proto/loader.ts PROTO_LOADER_OPTIONS');
  // Every proto the loader serves has its types generated (gen-types also names the imported kv.proto and auth.proto).
  assert.deepEqual(PROTO_FILES.filter((f) => !GEN_FILES.includes(f)), [], 'scripts/gen-types.mjs PROTO_FILES must name every file of src/proto/loader.ts PROTO_FILES');
});

test('messages.ts keeps its deliberate departures from the generated types (checked by the compiler)', () => {
  // Requests: bytes are Uint8Array only (a string would be read as base64, not UTF-8) ...
  const key = new TextEncoder().encode('k');
  const range: M.RangeRequest = { key, range_end: undefined, limit: 10n, revision: '3', sort_order: 'DESCEND' };
  // @ts-expect-error a string in a bytes field
  const stringKey: M.RangeRequest = { key: 'k' };
  // ... int64 is a string, a number or an exact bigint; an enum a name or any number (one it does not know).
  const put: M.PutRequest = { key, value: key, lease: 2n ** 62n, prev_kv: true };
  const sort: M.RangeRequest = { sort_target: 9 };
  // @ts-expect-error an enum name that is not etcd's
  const badSort: M.RangeRequest = { sort_order: 'UP' };
  // A oneof member that is a message is set or absent, never null; an ordinary message field may be null.
  const op: M.RequestOp = { request: 'request_put', request_put: put };
  // @ts-expect-error null as a oneof member
  const nullOp: M.RequestOp = { request_range: null };
  const txn: M.TxnRequest = { compare: [{ key, target: 'MOD', result: 'LESS', mod_revision: 5 }], success: [op], failure: [] };
  const proclaim: M.ProclaimRequest = { leader: null, value: key };
  // Responses: what the services always fill is not nullable (header, an event's kv) ...
  const header: M.RangeResponse['header'] = { cluster_id: '1', member_id: '2', revision: '3', raft_term: '4' };
  // @ts-expect-error a Range answer always has a header
  const noHeader: M.RangeResponse['header'] = null;
  // @ts-expect-error an event always has its kv
  const noKv: M.Event['kv'] = null;
  // ... except where etcd answers without one.
  const defragHeader: M.DefragmentResponse['header'] = null;
  // ResponseOp is a union on its discriminator: narrowing on `response` reaches the member.
  const rop = { response: 'response_put', response_put: { header, prev_kv: null } } as M.ResponseOp;
  const narrowed: M.PutResponse | undefined = rop.response === 'response_put' ? rop.response_put : undefined;
  // Fields of etcd releases after those simulated are optional in responses.
  const status: Pick<M.StatusResponse, 'storageVersion'> = {};
  assert.ok([range, stringKey, sort, badSort, nullOp, txn, proclaim, noHeader, noKv, defragHeader, narrowed, status].length > 0);
});
