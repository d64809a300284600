// etcd3 public API, key-value area: get/getAll with every builder option, put, delete, txns, namespaces.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Range, type IKeyValue, type Etcd3 } from 'etcd3';
import { withTarget } from './target.js';

/** Writes c, a, b so that every sort target gives a different order:
 *  c: create r1, mod r1, version 1, value 'm'; a: create r2, mod r6, version 3, value 'z';
 *  b: create r3, mod r4, version 2, value 'a'. Returns the put revisions r1..r6. */
async function sortFixture(client: Etcd3, p: string): Promise<bigint[]> {
  const revs: bigint[] = [];
  for (const [k, v] of [
    ['c', 'm'],
    ['a', 'q'],
    ['b', 'x'],
    ['b', 'a'],
    ['a', 'y'],
    ['a', 'z'],
  ] as const) {
    const res = await client.put(p + k).value(v);
    revs.push(BigInt(res.header.revision));
  }
  return revs;
}

const rel = (p: string, keys: string[]): string[] => keys.map((k) => k.slice(p.length));

test('get: string, number, json, buffer, exists, and a missing key', () =>
  withTarget('kv/get', async ({ client }, p) => {
    await client.put(p + 's').value('hello');
    await client.put(p + 'n').value(42);
    await client.put(p + 'j').value(JSON.stringify({ a: [1, 2] }));
    assert.equal(await client.get(p + 's').string(), 'hello');
    assert.equal(await client.get(p + 's'), 'hello'); // the builder is a thenable of string()
    assert.equal(await client.get(p + 'n').number(), 42);
    assert.deepEqual(await client.get(p + 'j').json(), { a: [1, 2] });
    assert.deepEqual(await client.get(p + 's').buffer(), Buffer.from('hello'));
    assert.equal(await client.get(p + 's').exists(), true);
    assert.equal(await client.get(p + 'missing').string(), null);
    assert.equal(await client.get(p + 'missing').buffer(), null);
    assert.equal(await client.get(p + 'missing').exists(), false);
    const res = await client.get(p + 's').exec();
    assert.equal(res.kvs.length, 1);
    const kv = res.kvs[0] as IKeyValue;
    assert.deepEqual(kv.key, Buffer.from(p + 's'));
    assert.equal(kv.version, '1');
    assert.equal(kv.lease, '0');
    assert.equal(kv.create_revision, kv.mod_revision);
    assert.equal(res.count, '1');
    assert.equal(res.more, false);
    assert.match(res.header.revision, /^[1-9][0-9]*$/);
  }));

test('getAll: prefix, inRange, keys, keyBuffers, strings, numbers, json, buffers, count', () =>
  withTarget('kv/getall', async ({ client }, p) => {
    await client.put(p + 'a').value('1');
    await client.put(p + 'b').value('2');
    await client.put(p + 'c').value('3');
    await client.put(p + 'x/d').value('"json"');
    assert.deepEqual(rel(p, await client.getAll().prefix(p).keys()), ['a', 'b', 'c', 'x/d']);
    assert.deepEqual(
      (await client.getAll().prefix(p + 'x/').keyBuffers()).map((b) => b.toString()),
      [p + 'x/d'],
    );
    assert.deepEqual(await client.getAll().prefix(p).strings(), {
      [p + 'a']: '1',
      [p + 'b']: '2',
      [p + 'c']: '3',
      [p + 'x/d']: '"json"',
    });
    assert.deepEqual(await client.getAll().prefix(p + 'x/').json(), { [p + 'x/d']: 'json' });
    assert.deepEqual(await client.getAll().inRange({ start: p + 'a', end: p + 'c' }).numbers(), {
      [p + 'a']: 1,
      [p + 'b']: 2,
    });
    assert.deepEqual(await client.getAll().inRange({ start: p + 'b', end: p + 'c' }).buffers(), {
      [p + 'b']: Buffer.from('2'),
    });
    assert.equal(await client.getAll().prefix(p).count(), 4);
    // keys-only responses carry empty values
    const keysOnly = await client.getAll().prefix(p).keys();
    assert.equal(keysOnly.length, 4);
    // count ignores limit
    const limited = await client.getAll().prefix(p).limit(2).exec();
    assert.equal(limited.kvs.length, 2);
    assert.equal(limited.count, '4');
    assert.equal(limited.more, true);
    // count() sends count_only: no kvs come back
    assert.equal(await client.getAll().prefix(p).limit(1).count(), 4);
  }));

test('getAll: sort by every target in both orders, with limit', () =>
  withTarget('kv/sort', async ({ client }, p) => {
    await sortFixture(client, p);
    const order = async (target: 'Key' | 'Version' | 'Create' | 'Mod' | 'Value', o: 'Ascend' | 'Descend') =>
      rel(p, await client.getAll().prefix(p).sort(target, o).keys());
    assert.deepEqual(await order('Key', 'Ascend'), ['a', 'b', 'c']);
    assert.deepEqual(await order('Key', 'Descend'), ['c', 'b', 'a']);
    assert.deepEqual(await order('Version', 'Ascend'), ['c', 'b', 'a']);
    assert.deepEqual(await order('Version', 'Descend'), ['a', 'b', 'c']);
    assert.deepEqual(await order('Create', 'Ascend'), ['c', 'a', 'b']);
    assert.deepEqual(await order('Create', 'Descend'), ['b', 'a', 'c']);
    assert.deepEqual(await order('Mod', 'Ascend'), ['c', 'b', 'a']);
    assert.deepEqual(await order('Mod', 'Descend'), ['a', 'b', 'c']);
    assert.deepEqual(await order('Value', 'Ascend'), ['b', 'c', 'a']);
    assert.deepEqual(await order('Value', 'Descend'), ['a', 'c', 'b']);
    // SortOrder None: key order
    assert.deepEqual(rel(p, await client.getAll().prefix(p).sort('Key', 'None').keys()), ['a', 'b', 'c']);
    // a non-Key target with order None is sorted ascending (etcd: "NONE with non-KEY target → ASCEND")
    assert.deepEqual(rel(p, await client.getAll().prefix(p).sort('Create', 'None').keys()), ['c', 'a', 'b']);
    // limit applies after sorting
    const top = await client.getAll().prefix(p).sort('Mod', 'Descend').limit(1).exec();
    assert.deepEqual(rel(p, top.kvs.map((kv) => kv.key.toString())), ['a']);
    assert.equal(top.more, true);
    assert.equal(top.count, '3');
    // the etcd3 builder rejects unknown names client-side
    assert.throws(() => client.getAll().sort('Bogus' as 'Key', 'Ascend'), /Unexpected "Bogus"/);
    // inside a txn too: a sorted range as a branch op, behind a compare named by etcd3 ('Version', '>')
    const tx = await client.if(p + 'a', 'Version', '>', 5).then(client.put(p + 'x').value('1')).else(client.getAll().prefix(p).sort('Create', 'Descend')).commit();
    assert.equal(tx.succeeded, false);
    assert.deepEqual(rel(p, tx.responses[0]!.response_range.kvs.map((kv) => kv.key.toString())), ['b', 'a', 'c']);
  }));

test('getAll: sort with limit — limit after sort and filters, more from the filtered list, count ignores both', () =>
  withTarget('kv/sort-limit', async ({ client }, p) => {
    const [r1, r2, r3, r4, r5, r6] = (await sortFixture(client, p)) as [bigint, bigint, bigint, bigint, bigint, bigint];
    const r7 = BigInt((await client.put(p + 'd').value('n')).header.revision);
    // now: a (create r2, mod r6, 'z'), b (r3, r4, 'a'), c (r1, r1, 'm'), d (r7, r7, 'n')
    assert.ok(r1 < r2 && r2 < r3 && r3 < r4 && r4 < r5 && r5 < r6 && r6 < r7);
    const keysOf = (res: { kvs: IKeyValue[] }): string[] => rel(p, res.kvs.map((kv) => kv.key.toString()));

    const byValue = await client.getAll().prefix(p).sort('Value', 'Ascend').limit(2).exec();
    assert.deepEqual(keysOf(byValue), ['b', 'c']);
    assert.equal(byValue.more, true);
    assert.equal(byValue.count, '4');
    const keyDesc = await client.getAll().prefix(p).sort('Key', 'Descend').limit(2).exec();
    assert.deepEqual(keysOf(keyDesc), ['d', 'c']); // the last keys, not the first two reversed
    assert.equal(keyDesc.more, true);
    const exact = await client.getAll().prefix(p).sort('Create', 'Descend').limit(4).exec();
    assert.deepEqual(keysOf(exact), ['d', 'b', 'a', 'c']);
    assert.equal(exact.more, false); // limit == number of keys: nothing more
    const unlimited = await client.getAll().prefix(p).sort('Mod', 'Ascend').limit(0).exec();
    assert.deepEqual(keysOf(unlimited), ['c', 'b', 'a', 'd']);
    assert.equal(unlimited.more, false);

    // filters prune before the limit; `more` counts what the filters left, `count` what the range holds
    const filtered = await client.getAll().prefix(p).minModRevision(String(r4)).sort('Mod', 'Descend').limit(2).exec();
    assert.deepEqual(keysOf(filtered), ['d', 'a']); // b (mod r4) is cut by the limit
    assert.equal(filtered.more, true);
    assert.equal(filtered.count, '4');
    const fits = await client.getAll().prefix(p).maxCreateRevision(String(r2)).sort('Create', 'Descend').limit(2).exec();
    assert.deepEqual(keysOf(fits), ['a', 'c']);
    assert.equal(fits.more, false); // two keys survive the filter, limit 2: nothing more, although count is 4
    assert.equal(fits.count, '4');

    // keys only, sorted by the values it does not return
    assert.deepEqual(rel(p, await client.getAll().prefix(p).sort('Value', 'Descend').limit(2).keys()), ['a', 'd']);
    // the same through the low-level client (etcd3's enum names in the request)
    const keysOnly = await client.kv.range({
      key: Buffer.from(p),
      range_end: Buffer.from(p.slice(0, -1) + String.fromCharCode(p.charCodeAt(p.length - 1) + 1)),
      sort_target: 'Value',
      sort_order: 'Descend',
      limit: 1,
      keys_only: true,
    });
    assert.deepEqual(keysOf(keysOnly), ['a']);
    assert.equal(keysOnly.kvs[0]?.value.length, 0);
    assert.equal(keysOnly.more, true);
    assert.equal(keysOnly.count, '4');
    // count ignores sort and limit
    assert.equal(await client.getAll().prefix(p).sort('Value', 'Ascend').limit(1).count(), 4);
    // in a namespace, and at a past revision (the view at r5: a 'y', b 'a', c 'm')
    const ns = client.namespace(p);
    assert.deepEqual(await ns.getAll().sort('Value', 'Descend').limit(1).strings(), { a: 'z' });
    const past = await ns.getAll().revision(String(r5)).sort('Value', 'Descend').limit(2).exec();
    assert.deepEqual(
      past.kvs.map((kv) => [kv.key.toString(), kv.value.toString()]),
      [
        ['a', 'y'],
        ['c', 'm'],
      ],
    );
    assert.equal(past.more, true);
    assert.equal(past.count, '3');
  }));

test('getAll/get: revision, min/max mod revision, min/max create revision, serializable', () =>
  withTarget('kv/revfilters', async ({ client }, p) => {
    const [r1, r2, r3, r4, r5, r6] = (await sortFixture(client, p)) as [bigint, bigint, bigint, bigint, bigint, bigint];
    // historical reads (header revision stays the current one)
    const atR3 = await client.getAll().prefix(p).revision(String(r3)).exec();
    assert.deepEqual(
      atR3.kvs.map((kv) => [kv.key.toString().slice(p.length), kv.value.toString()]),
      [
        ['a', 'q'],
        ['b', 'x'],
        ['c', 'm'],
      ],
    );
    assert.ok(BigInt(atR3.header.revision) >= r6);
    assert.equal(await client.get(p + 'a').revision(String(r5)).string(), 'y');
    assert.equal(await client.get(p + 'b').revision(String(r2)).string(), null);
    assert.equal(await client.get(p + 'a').revision(Number(r6)).string(), 'z');
    // mod revision filters: a@r6, b@r4, c@r1
    assert.deepEqual(rel(p, await client.getAll().prefix(p).minModRevision(String(r4)).keys()), ['a', 'b']);
    assert.deepEqual(rel(p, await client.getAll().prefix(p).maxModRevision(String(r4)).keys()), ['b', 'c']);
    assert.deepEqual(
      rel(p, await client.getAll().prefix(p).minModRevision(String(r2)).maxModRevision(String(r5)).keys()),
      ['b'],
    );
    // create revision filters: c@r1, a@r2, b@r3
    assert.deepEqual(rel(p, await client.getAll().prefix(p).minCreateRevision(String(r2)).keys()), ['a', 'b']);
    assert.deepEqual(rel(p, await client.getAll().prefix(p).maxCreateRevision(String(r2)).keys()), ['a', 'c']);
    assert.deepEqual(
      rel(p, await client.getAll().prefix(p).minCreateRevision(String(r1 + 1n)).maxCreateRevision(String(r2)).keys()),
      ['a'],
    );
    // filters with sort and limit (the election pattern: newest creator before a revision)
    const newestBefore = await client
      .getAll()
      .prefix(p)
      .maxCreateRevision(String(r3 - 1n))
      .sort('Create', 'Descend')
      .limit(1)
      .exec();
    assert.deepEqual(rel(p, newestBefore.kvs.map((kv) => kv.key.toString())), ['a']);
    // serializable reads see the same data on a single member
    assert.deepEqual(rel(p, await client.getAll().prefix(p).serializable(true).keys()), ['a', 'b', 'c']);
    assert.equal(await client.get(p + 'a').serializable(true).string(), 'z');
  }));

test('put: getPrevious, lease, ignoreLease, touch', () =>
  withTarget('kv/put', async ({ client }, p) => {
    const first = await client.put(p + 'k').value('v1').getPrevious();
    assert.equal(first.key, undefined, 'no previous value for a new key');
    assert.match(first.header.revision, /^[0-9]+$/);
    const second = await client.put(p + 'k').value('v2').getPrevious();
    assert.deepEqual(second.value, Buffer.from('v1'));
    assert.equal(second.version, '1');
    assert.equal(BigInt(second.header.revision), BigInt(second.mod_revision) + 1n);

    const lease = client.lease(30, { autoKeepAlive: false });
    try {
      const id = await lease.grant();
      await client.put(p + 'leased').value('x').lease(id);
      const got = (await client.get(p + 'leased').exec()).kvs[0] as IKeyValue;
      assert.equal(got.lease, id);
      // ignoreLease keeps the lease while changing the value
      await client.put(p + 'leased').value('y').ignoreLease();
      const after = (await client.get(p + 'leased').exec()).kvs[0] as IKeyValue;
      assert.equal(after.lease, id);
      assert.deepEqual(after.value, Buffer.from('y'));
      // a plain put detaches the lease
      await client.put(p + 'leased').value('z');
      assert.equal(((await client.get(p + 'leased').exec()).kvs[0] as IKeyValue).lease, '0');
      // lease given as a promise
      await client.put(p + 'leased2').value('w').lease(lease.grant());
      assert.equal(((await client.get(p + 'leased2').exec()).kvs[0] as IKeyValue).lease, id);
    } finally {
      await lease.revoke();
    }

    // touch: ignore_value — new revision and version, same value
    const before = (await client.get(p + 'k').exec()).kvs[0] as IKeyValue;
    const touched = await client.put(p + 'k').touch();
    const now = (await client.get(p + 'k').exec()).kvs[0] as IKeyValue;
    assert.deepEqual(now.value, Buffer.from('v2'));
    assert.equal(now.version, String(BigInt(before.version) + 1n));
    assert.equal(now.mod_revision, touched.header.revision);
    assert.equal(now.create_revision, before.create_revision);
  }));

test('delete: key, prefix, range, inRange, all (in a namespace), getPrevious', () =>
  withTarget('kv/delete', async ({ client }, p) => {
    for (const k of ['a', 'b', 'c', 'd', 'e/1', 'e/2', 'f']) await client.put(p + k).value(k);
    const one = await client.delete().key(p + 'a');
    assert.equal(one.deleted, '1');
    const none = await client.delete().key(p + 'zz');
    assert.equal(none.deleted, '0');
    assert.equal(BigInt(none.header.revision), BigInt(one.header.revision), 'deleting nothing does not bump the revision');
    const pref = await client.delete().prefix(p + 'e/');
    assert.equal(pref.deleted, '2');
    const ranged = await client.delete().range(new Range(p + 'b', p + 'c'));
    assert.equal(ranged.deleted, '1');
    const prev = await client.delete().inRange({ start: p + 'c', end: p + 'e' }).getPrevious();
    assert.deepEqual(
      prev.map((kv) => [kv.key.toString().slice(p.length), kv.value.toString()]),
      [
        ['c', 'c'],
        ['d', 'd'],
      ],
    );
    const ns = client.namespace(p);
    const all = await ns.delete().all();
    assert.equal(all.deleted, '1'); // only f was left
    assert.deepEqual(await client.getAll().prefix(p).keys(), []);
  }));

test('txn: if/then/else with every comparator on every target', () =>
  withTarget('kv/txn', async ({ client }, p) => {
    const lease = client.lease(30, { autoKeepAlive: false });
    try {
      const leaseId = await lease.grant();
      await client.put(p + 'k').value('m');
      await client.put(p + 'k').value('m').lease(leaseId); // version 2, leased
      const kv = (await client.get(p + 'k').exec()).kvs[0] as IKeyValue;
      const create = Number(kv.create_revision);
      const mod = Number(kv.mod_revision);
      type Column = 'Value' | 'Version' | 'Create' | 'Mod' | 'Lease';
      type Cmp = '==' | '===' | '!=' | '!==' | '>' | '<';
      // [column, cmp, operand, expected]
      const cases: [Column, Cmp, string | number, boolean][] = [
        ['Value', '==', 'm', true],
        ['Value', '===', 'n', false],
        ['Value', '!=', 'n', true],
        ['Value', '!==', 'm', false],
        ['Value', '>', 'l', true],
        ['Value', '<', 'l', false],
        ['Version', '==', 2, true],
        ['Version', '!=', 2, false],
        ['Version', '>', 1, true],
        ['Version', '<', 2, false],
        ['Create', '==', create, true],
        ['Create', '===', create + 1, false],
        ['Create', '<', create + 1, true],
        ['Create', '>', create, false],
        ['Mod', '==', mod, true],
        ['Mod', '!==', mod, false],
        ['Mod', '>', mod - 1, true],
        ['Mod', '<', mod, false],
        ['Lease', '==', leaseId, true],
        ['Lease', '!=', leaseId, false],
        ['Lease', '>', 0, true],
        ['Lease', '<', 1, false],
      ];
      for (const [column, cmp, operand, expected] of cases) {
        const res = await client
          .if(p + 'k', column, cmp, operand)
          .then(client.get(p + 'k'))
          .else(client.get(p + 'k'), client.get(p + 'missing'))
          .commit();
        assert.equal(res.succeeded, expected, `${column} ${cmp} ${operand}`);
        assert.equal(res.responses.length, expected ? 1 : 2);
      }
      // absent key: Create == 0 holds, Version == 0 holds, Value compares always fail
      const absent = await client.if(p + 'absent', 'Create', '==', 0).and(p + 'absent', 'Version', '==', 0).commit();
      assert.equal(absent.succeeded, true);
      const absentValue = await client.if(p + 'absent', 'Value', '!=', 'x').commit();
      assert.equal(absentValue.succeeded, false);

      // and(...) needs all compares; then-branch ops all apply at one revision
      const res = await client
        .if(p + 'k', 'Value', '==', 'm')
        .and(p + 'k', 'Version', '==', 2)
        .then(client.put(p + 'x').value('1'), client.put(p + 'y').value('2'), client.delete().key(p + 'k'), client.get(p + 'x'))
        .else(client.put(p + 'else').value('no'))
        .commit();
      assert.equal(res.succeeded, true);
      const [rPut, , rDel, rGet] = res.responses;
      assert.ok(rPut?.response_put);
      assert.equal(rDel?.response_delete_range.deleted, '1');
      assert.deepEqual(rGet?.response_range.kvs.map((k) => k.value.toString()), ['1']);
      const x = (await client.get(p + 'x').exec()).kvs[0] as IKeyValue;
      const y = (await client.get(p + 'y').exec()).kvs[0] as IKeyValue;
      assert.equal(x.mod_revision, res.header.revision);
      assert.equal(y.mod_revision, res.header.revision);
      assert.equal(await client.get(p + 'k').exists(), false);
      assert.equal(await client.get(p + 'else').exists(), false);

      // else branch runs when a compare fails
      const other = await client
        .if(p + 'x', 'Value', '==', 'nope')
        .then(client.put(p + 'then').value('t'))
        .else(client.put(p + 'else').value('e'))
        .commit();
      assert.equal(other.succeeded, false);
      assert.equal(await client.get(p + 'else').string(), 'e');
      assert.equal(await client.get(p + 'then').exists(), false);

      // a txn with no compares takes the then-branch
      const empty = await client.if(p + 'x', 'Value', '==', '1').then().commit();
      assert.equal(empty.succeeded, true);
      assert.deepEqual(empty.responses, []);
    } finally {
      await lease.revoke();
    }
  }));

test('txn through the low-level client: etcd3\'s enum names in a compare, a range op and a nested txn', () =>
  withTarget('kv/txnnames', async ({ client }, p) => {
    await client.put(p + 'a').value('1');
    await client.put(p + 'b').value('2');
    await client.put(p + 'a').value('3'); // a: version 2, the newest mod revision
    const key = (k: string): Buffer => Buffer.from(p + k);
    const range = { key: key('a'), range_end: key('c'), sort_target: 'Mod', sort_order: 'Descend' };
    const txn = (target: string, result: string, version: number) =>
      client.kv.txn({
        compare: [{ key: key('a'), target, result, version }],
        success: [{ request_range: range }, { request_txn: { compare: [{ key: key('b'), target: 'Version', result: 'Equal', version: 1 }], success: [{ request_range: range }] } }],
        failure: [{ request_range: { ...range, sort_order: 'Ascend' } }],
      } as unknown as Parameters<Etcd3['kv']['txn']>[0]);
    const yes = await txn('Version', 'Greater', 1); // names for numbers: 'Greater' is 1, not the default Equal
    assert.equal(yes.succeeded, true);
    assert.deepEqual(yes.responses[0]?.response_range.kvs.map((kv) => kv.key.toString().slice(p.length)), ['a', 'b']);
    const nested = yes.responses[1]?.response_txn;
    assert.equal(nested?.succeeded, true);
    assert.deepEqual(nested?.responses[0]?.response_range.kvs.map((kv) => kv.key.toString().slice(p.length)), ['a', 'b']);
    const no = await txn('Version', 'Less', 2);
    assert.equal(no.succeeded, false);
    assert.deepEqual(no.responses[0]?.response_range.kvs.map((kv) => kv.key.toString().slice(p.length)), ['b', 'a']);
  }));

test('namespaces: keys are prefixed on the way in and stripped on the way out, txns included', () =>
  withTarget('kv/ns', async ({ client }, p) => {
    const ns = client.namespace(p + 'ns/');
    await ns.put('a').value('1');
    await ns.put('b').value('2');
    await client.put(p + 'outside').value('0');
    assert.equal(await client.get(p + 'ns/a').string(), '1');
    assert.equal(await ns.get('a').string(), '1');
    assert.equal(await ns.get('outside').string(), null);
    assert.deepEqual(await ns.getAll().keys(), ['a', 'b']);
    assert.deepEqual(await ns.getAll().all().strings(), { a: '1', b: '2' });
    assert.equal(await ns.getAll().count(), 2);
    const nested = ns.namespace('deep/');
    await nested.put('c').value('3');
    assert.equal(await client.get(p + 'ns/deep/c').string(), '3');
    assert.deepEqual(await ns.getAll().prefix('deep/').keys(), ['deep/c']);
    const res = await ns.if('a', 'Value', '==', '1').then(ns.put('c').value('4')).else(ns.put('d').value('5')).commit();
    assert.equal(res.succeeded, true);
    assert.equal(await client.get(p + 'ns/c').string(), '4');
    await ns.delete().all();
    assert.deepEqual(rel(p, await client.getAll().prefix(p).keys()), ['outside']);
  }));

test('delete().all() in a namespace: only the namespace, in one revision; getPrevious keys keep the prefix', () =>
  withTarget('kv/ns-delete-all', async ({ client }, p) => {
    const ns = client.namespace(p + 'ns/');
    for (const k of ['a', 'b', 'deep/c']) await ns.put(k).value(k);
    await client.put(p + 'ns').value('sibling-without-slash');
    await client.put(p + 'nt').value('next-prefix');
    await client.put(p + 'ns0').value('after');
    const nested = await ns.namespace('deep/').delete().all();
    assert.equal(nested.deleted, '1');
    assert.deepEqual(await ns.getAll().keys(), ['a', 'b']);
    const before = BigInt((await client.get(p + 'ns').exec()).header.revision);
    const prev = await ns.delete().all().getPrevious();
    // etcd3 strips the namespace from range results and watch events, not from DeleteRange's prev_kvs
    assert.deepEqual(
      prev.map((kv) => [kv.key.toString(), kv.value.toString()]),
      [
        [p + 'ns/a', 'a'],
        [p + 'ns/b', 'b'],
      ],
    );
    const after = await client.getAll().prefix(p).exec();
    assert.equal(BigInt(after.header.revision), before + 1n, 'one revision for the whole range');
    assert.deepEqual(rel(p, after.kvs.map((kv) => kv.key.toString())), ['ns', 'ns0', 'nt']);
    const again = await ns.delete().all();
    assert.equal(again.deleted, '0');
    assert.equal(BigInt(again.header.revision), before + 1n);
  }));
