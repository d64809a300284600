import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ctl, noteLease, beforeFreshSimAndEtcd, watchUntil, type Target } from './etcdctl_helpers.js';
import { requireCommands } from '../support/prerequisites.js';

/** Compared with a real etcd 3.4.23 through etcdctl (skipped outside CI when they are missing). */
const skip = requireCommands(['etcd', 'etcdctl']);

// etcdctl against etcdsim serve and a fresh real etcd 3.4.23, the same commands in the same order: every
// output must match once cluster/member IDs, addresses, lease IDs and raft terms are normalised.
let sim: Target;
let etcd: Target;
beforeFreshSimAndEtcd((s, e) => {
  sim = s;
  etcd = e;
});

async function same(args: string[], input?: string): Promise<string> {
  const a = await ctl(etcd, args, input);
  const b = await ctl(sim, args, input);
  assert.deepEqual({ cmd: args.join(' '), ...b }, { cmd: args.join(' '), ...a }, `etcdctl ${args.join(' ')}`);
  return a.out;
}

test('put, and get of one key in every output format', { skip }, async () => {
  await same(['put', '/k/a', 'va']);
  await same(['put', '/k/b', 'vb', '--prev-kv']);
  await same(['put', '/k/a', 'va2', '--prev-kv']);
  await same(['put', '/k/c', 'vc', '-w', 'json']);
  for (const w of ['simple', 'json', 'fields']) await same(['get', '/k/a', '-w', w]);
  await same(['get', '/k/missing', '-w', 'json']);
});

test('get with range flags', { skip }, async () => {
  await same(['get', '/k/', '--prefix']);
  await same(['get', '/k/b', '--from-key']);
  await same(['get', '/k/', '--prefix', '--rev', '3']);
  await same(['get', '/k/', '--prefix', '--limit', '2', '-w', 'json']);
  await same(['get', '/k/', '--prefix', '--sort-by', 'MODIFY', '--order', 'DESCEND']);
  await same(['get', '/k/', '--prefix', '--sort-by', 'VALUE', '--order', 'ASCEND']);
  await same(['get', '/k/', '--prefix', '--keys-only']);
  // (--count-only is etcdctl 3.5+; 3.4's etcdctl rejects it before any request)
  await same(['get', '/k/', '--prefix', '--print-value-only']);
  await same(['get', '/k/a', '/k/c', '-w', 'fields']);
  await same(['get', '/k/', '--prefix', '--rev', '99']);
});

test('txn in its interactive form, read from stdin', { skip }, async () => {
  await same(['txn', '-i'], 'value("/k/a") = "va2"\n\nput /k/t yes\nget /k/a\n\nput /k/t no\n\n');
  await same(['txn', '-i', '-w', 'json'], 'mod("/k/a") > "100"\n\nput /k/t1 x\n\ndel /k/t\n\n');
  await same(['get', '/k/t', '/k/u']);
});

test('del with --prev-kv, --prefix, --from-key', { skip }, async () => {
  await same(['put', '/d/a', '1']);
  await same(['put', '/d/b', '2']);
  await same(['put', '/d/c', '3']);
  await same(['del', '/d/a', '--prev-kv']);
  await same(['del', '/d/missing']);
  await same(['del', '/d/', '--prefix', '-w', 'json']);
  await same(['put', '/e/a', '1']);
  await same(['put', '/e/b', '2']);
  await same(['del', '/e/b', '--from-key', '--prev-kv']);
});

test('watch --prefix --rev replays history, then live events (run in the background)', { skip }, async () => {
  const run = async (t: Target): Promise<string> =>
    watchUntil(t, ['--prefix', '/k/', '--rev', '2'], '/k/live\nnow\n', async () => {
      await ctl(t, ['put', '/k/live', 'now']);
    });
  const a = await run(etcd);
  const b = await run(sim);
  assert.equal(b, a);
});

test('watch --prev-kv shows the previous value', { skip }, async () => {
  const run = async (t: Target): Promise<string> =>
    watchUntil(t, ['/k/live', '--prev-kv'], '/k/live\nlater\n', async () => {
      await ctl(t, ['put', '/k/live', 'later']);
    });
  const a = await run(etcd);
  assert.equal(await run(sim), a);
});

test('compact, then reads and watches below the compaction point fail as etcd fails', { skip }, async () => {
  await same(['compact', '5']);
  await same(['compact', '6', '--physical']);
  await same(['get', '/k/a', '--rev', '4']);
  await same(['compact', '3']);
  await same(['get', '/k/', '--prefix', '--rev', '6', '--keys-only']);
});

test('endpoint hashkv: the same hash as etcd after the same history, current and older revisions', { skip }, async () => {
  // Before the lease test: keys with leases would carry different lease IDs on the two sides.
  await same(['endpoint', 'hashkv']);
  await same(['endpoint', 'hashkv', '-w', 'json']);
  for (const rev of ['7', '9', '12', '6', '999']) await same(['endpoint', 'hashkv', '--rev', rev]);
});

test('lease grant, put --lease, timetolive --keys, keep-alive --once, list, revoke', { skip }, async () => {
  const ga = await ctl(etcd, ['lease', 'grant', '600']);
  const gb = await ctl(sim, ['lease', 'grant', '600']);
  const ia = noteLease(etcd, ga.out);
  const ib = noteLease(sim, gb.out);
  assert.equal(normaliseAgain(sim, gb.out), normaliseAgain(etcd, ga.out));
  const both = async (args: (id: string) => string[]): Promise<void> => {
    // real etcd lists a lease's keys in Go map order (random) and counts down TTL on its own timer (each
    // etcdctl run takes a while on a busy machine: within 10 s of the grant is the same answer)
    const fix = (r: { code: number; out: string }): { code: number; out: string } => ({
      code: r.code,
      out: r.out
        .replace(/attached keys\(\[([^\]]*)\]\)/, (_m, keys: string) => `attached keys([${keys.split(' ').sort().join(' ')}])`)
        .replace(/remaining\((?:59\d|600)s\)/, 'remaining(~600s)')
        .replace(/"TTL":(?:59\d|600),/, '"TTL":~600,'),
    });
    const a = fix(await ctl(etcd, args(ia)));
    const b = fix(await ctl(sim, args(ib)));
    assert.deepEqual(b, a, args('<id>').join(' '));
  };
  await both((id) => ['put', '/l/a', '1', '--lease', id]);
  await both((id) => ['put', '/l/b', '2', '--lease', id]);
  await both((id) => ['lease', 'timetolive', id, '--keys']);
  await both((id) => ['lease', 'keep-alive', '--once', id]);
  await both(() => ['lease', 'list']);
  await both(() => ['get', '/l/', '--prefix', '-w', 'json']);
  await both((id) => ['lease', 'revoke', id]);
  await both((id) => ['lease', 'timetolive', id]);
  await both(() => ['get', '/l/', '--prefix', '-w', 'fields']);
  await both((id) => ['lease', 'revoke', id]);
});

test('member list and endpoint health', { skip }, async () => {
  await same(['member', 'list']);
  await same(['member', 'list', '-w', 'json']);
  const a = await ctl(etcd, ['endpoint', 'health']);
  const b = await ctl(sim, ['endpoint', 'health']);
  const strip = (s: string): string => s.replace(/took = [0-9.]+[µmn]?s/, 'took = T');
  assert.equal(strip(b.out), strip(a.out));
});

test('endpoint status: version, leader, learner and error columns match', { skip }, async () => {
  const a = await ctl(etcd, ['endpoint', 'status', '-w', 'json']);
  const b = await ctl(sim, ['endpoint', 'status', '-w', 'json']);
  const pick = (s: string): unknown => ({
    endpoint: /"Endpoint":"([^"]*)"/.exec(s)?.[1],
    header: /"header":\{[^}]*\}/.exec(s)?.[0],
    version: /"version":"([^"]*)"/.exec(s)?.[1],
    leader: /"leader":(\w+)/.exec(s)?.[1],
    learner: /"isLearner":(\w+)/.exec(s)?.[1] ?? 'absent',
    errors: /"errors":(\[[^\]]*\])/.exec(s)?.[1] ?? 'absent',
  });
  assert.deepEqual(pick(b.out), pick(a.out));
});

function normaliseAgain(t: Target, s: string): string {
  let out = s;
  for (const [from, to] of t.subst) out = out.split(from).join(to);
  return out;
}
