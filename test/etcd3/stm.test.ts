// etcd3 public API, software transactions in every isolation level: commit, conflict retry, snapshot
// reads, STMConflictError when retries run out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { STMConflictError, type Isolation } from 'etcd3';
import { withTarget } from './target.js';

// etcd3 declares Isolation as a `const enum` (no runtime object); these are its values.
const levels = [
  ['SerializableSnapshot', 0 as Isolation],
  ['Serializable', 1 as Isolation],
  ['RepeatableReads', 2 as Isolation],
  ['ReadCommitted', 3 as Isolation],
] as const;

for (const [name, isolation] of levels) {
  test(`stm ${name}: reads and writes commit together`, () =>
    withTarget(`stm/commit-${name}`, async ({ client }, p) => {
      // a and b written in one revision: etcd3's SerializableSnapshot refuses writes to keys modified
      // after the earliest mod revision it read (see the write-check test below)
      await client.if(p + 'a', 'Create', '==', 0).then(client.put(p + 'a').value('10'), client.put(p + 'b').value('5')).commit();
      const result = await client.stm({ isolation }).transact(async (tx) => {
        const a = Number(await tx.get(p + 'a').string());
        const b = Number(await tx.get(p + 'b').string());
        await tx.put(p + 'a').value(String(a - 3));
        await tx.put(p + 'b').value(String(b + 3));
        await tx.delete().key(p + 'gone');
        return a + b;
      });
      assert.equal(result, 15);
      assert.equal(await client.get(p + 'a').string(), '7');
      assert.equal(await client.get(p + 'b').string(), '8');
      const a = (await client.get(p + 'a').exec()).kvs[0];
      const b = (await client.get(p + 'b').exec()).kvs[0];
      assert.equal(a?.mod_revision, b?.mod_revision, 'one txn, one revision');
    }));

  test(`stm ${name}: a read key changed before commit ${name === 'ReadCommitted' ? 'does not conflict' : 'conflicts and retries'}`, () =>
    withTarget(`stm/conflict-${name}`, async ({ client }, p) => {
      await client.put(p + 'a').value('1');
      let attempts = 0;
      const seen: string[] = [];
      await client.stm({ isolation, retries: 3 }).transact(async (tx) => {
        attempts++;
        const a = (await tx.get(p + 'a').string()) ?? 'missing';
        seen.push(a);
        if (attempts === 1) await client.put(p + 'a').value('2'); // someone else writes
        await tx.put(p + 'copy').value(a);
      });
      if (name === 'ReadCommitted') {
        assert.equal(attempts, 1);
        assert.equal(await client.get(p + 'copy').string(), '1'); // committed a stale copy
      } else {
        assert.equal(attempts, 2);
        assert.deepEqual(seen, ['1', '2']);
        assert.equal(await client.get(p + 'copy').string(), '2');
      }
    }));

  test(`stm ${name}: ${name.startsWith('Serializable') ? 'later reads come from the first read revision' : 'every read sees the newest value'}`, () =>
    withTarget(`stm/snapshot-${name}`, async ({ client }, p) => {
      await client.put(p + 'a').value('a1');
      await client.put(p + 'b').value('b1');
      let attempts = 0;
      const seenB: string[] = [];
      await client.stm({ isolation, retries: 3 }).transact(async (tx) => {
        attempts++;
        await tx.get(p + 'a').string();
        if (attempts === 1) await client.put(p + 'b').value('b2');
        seenB.push((await tx.get(p + 'b').string()) ?? 'missing');
        await tx.put(p + 'out').value('x');
      });
      if (name.startsWith('Serializable')) {
        // the first attempt read b at a's revision (b1), b has changed since → conflict, retry sees b2
        assert.deepEqual(seenB, ['b1', 'b2']);
        assert.equal(attempts, 2);
      } else {
        assert.deepEqual(seenB, ['b2']);
        assert.equal(attempts, 1);
      }
    }));

  test(`stm ${name}: STMConflictError once retries run out`, () =>
    withTarget(`stm/exhausted-${name}`, async ({ client }, p) => {
      await client.put(p + 'a').value('0');
      let attempts = 0;
      const run = client.stm({ isolation, retries: 2 }).transact(async (tx) => {
        attempts++;
        await tx.get(p + 'a').string();
        await client.put(p + 'a').value(String(attempts)); // always changed under the transaction
        await tx.put(p + 'out').value('x');
      });
      if (name === 'ReadCommitted') {
        await run;
        assert.equal(attempts, 1);
      } else {
        await assert.rejects(run, STMConflictError);
        assert.equal(attempts, 3);
        assert.equal(await client.get(p + 'out').exists(), false);
      }
    }));
}

test('stm SerializableSnapshot also refuses a write to a key changed after the earliest read (Serializable does not)', () =>
  withTarget('stm/write-check', async ({ client }, p) => {
    await client.put(p + 'a').value('1');
    await client.put(p + 'c').value('old');
    const attempt = (isolation: Isolation) =>
      client.stm({ isolation, retries: 0 }).transact(async (tx) => {
        await tx.get(p + 'a').string();
        await client.put(p + 'c').value('changed-by-someone'); // c changes after a's mod revision
        await tx.put(p + 'c').value('mine');
      });
    await assert.rejects(attempt(0 as Isolation), STMConflictError);
    assert.equal(await client.get(p + 'c').string(), 'changed-by-someone');
    await attempt(1 as Isolation);
    assert.equal(await client.get(p + 'c').string(), 'mine');
  }));

for (const [name, isolation] of levels.filter(([n]) => n !== 'ReadCommitted')) {
  test(`stm ${name}: concurrent read-modify-write transactions retry until every increment lands`, () =>
    withTarget(`stm/contention-${name}`, async ({ client }, p) => {
      await client.put(p + 'counter').value('0');
      const workers = 4;
      let attempts = 0;
      const results = await Promise.all(
        Array.from({ length: workers }, (_, i) =>
          client.stm({ isolation, retries: 2 * workers }).transact(async (tx) => {
            attempts++;
            const n = Number(await tx.get(p + 'counter').string());
            await tx.put(p + 'counter').value(String(n + 1));
            await tx.put(p + `by/${i}`).value(String(n));
            return n;
          }),
        ),
      );
      assert.equal(await client.get(p + 'counter').string(), String(workers));
      // each worker saw a different count: the increments were serialized
      assert.deepEqual([...results].sort((a, b) => a - b), [0, 1, 2, 3]);
      assert.ok(attempts > workers, `no retries happened (${attempts} attempts)`);
      assert.deepEqual(
        Object.values(await client.getAll().prefix(p + 'by/').strings()).sort(),
        ['0', '1', '2', '3'],
      );
    }));
}
