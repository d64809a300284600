// etcd3 public API, watch area: put/delete/data/end/error events, startRevision replay (seeds 002 and
// 003), withPreviousKV, only(), compaction cancel, and what the etcd3 Watcher does when its stream
// breaks while it is still catching up from an old revision.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdError, type IKeyValue, type IWatchResponse, type Watcher } from 'etcd3';
import { withTarget, eventually, currentRevision, type Target, type TargetOptions } from './target.js';

interface Ev {
  readonly type: 'put' | 'delete';
  readonly key: string;
  readonly value: string;
  readonly mod: bigint;
  readonly prev: string | null | undefined;
}

interface Recorder {
  readonly events: Ev[];
  readonly data: IWatchResponse[];
  readonly errors: Error[];
  readonly disconnects: Error[];
  connected: number;
  ends: number;
}

const open: { w: Watcher; r: Recorder }[] = [];

/** withTarget, and every watcher the test recorded is canceled before the client closes (etcd3 keeps
 *  retrying a watch stream forever if the client is closed under a live watcher). A watcher the server
 *  canceled is left alone: cancel() on it would wait for an answer that never comes. */
function run(name: string, fn: (t: Target, p: string) => Promise<void>, options: TargetOptions = {}): Promise<void> {
  return withTarget(
    name,
    async (t, p) => {
      try {
        await fn(t, p);
      } finally {
        for (const { w, r } of open.splice(0)) if (r.errors.length === 0 && r.ends === 0) await w.cancel();
      }
    },
    options,
  );
}

/** Records everything a watcher emits; keys are reported relative to `p`. */
function record(w: Watcher, p: string): Recorder {
  const r: Recorder = { events: [], data: [], errors: [], disconnects: [], connected: 0, ends: 0 };
  open.push({ w, r });
  const ev =
    (type: 'put' | 'delete') =>
    (kv: IKeyValue, prev?: IKeyValue): void => {
      r.events.push({
        type,
        key: kv.key.toString().slice(p.length),
        value: kv.value.toString(),
        mod: BigInt(kv.mod_revision),
        prev: prev === undefined ? undefined : prev === null ? null : prev.value.toString(),
      });
    };
  w.on('put', ev('put'));
  w.on('delete', ev('delete'));
  w.on('data', (res) => r.data.push(res));
  w.on('error', (err) => r.errors.push(err));
  w.on('disconnected', (err) => r.disconnects.push(err));
  w.on('connected', () => {
    r.connected++;
  });
  w.on('end', () => {
    r.ends++;
  });
  return r;
}

const brief = (evs: readonly Ev[]): string[] => evs.map((e) => `${e.type} ${e.key}=${e.value}`);

test('watch a key: put, delete and data events; cancel ends the watcher', () =>
  run('watch/basic', async (t, p) => {
    const { client } = t;
    const w = await client.watch().key(p + 'k').create();
    const r = record(w, p);
    const put = await client.put(p + 'k').value('v1');
    await client.put(p + 'other').value('ignored');
    const del = await client.delete().key(p + 'k');
    await eventually(t, () => r.events.length >= 2, 'put and delete');
    assert.deepEqual(brief(r.events), ['put k=v1', 'delete k=']);
    assert.equal(r.events[0]?.mod, BigInt(put.header.revision));
    assert.equal(r.events[1]?.mod, BigInt(del.header.revision));
    // 'data' carries the raw response: enum names from etcd3's bundled proto, int64 as strings
    const events = r.data.flatMap((d) => d.events);
    assert.deepEqual(
      events.map((e) => e.type),
      ['Put', 'Delete'],
    );
    assert.equal(typeof r.data[0]?.header.revision, 'string');
    assert.equal(r.data[0]?.watch_id, w.id);
    assert.equal(w.lastRevision(), String(BigInt(del.header.revision) + 1n));
    await w.cancel();
    assert.equal(r.ends, 1);
    assert.deepEqual(r.errors, []);
  }));

test('watch a prefix; only("put") and only("delete") filter event types', () =>
  run('watch/only', async (t, p) => {
    const { client } = t;
    const all = record(await client.watch().prefix(p).create(), p);
    const puts = record(await client.watch().prefix(p).only('put').create(), p);
    const dels = record(await client.watch().prefix(p).only('delete').create(), p);
    await client.put(p + 'a').value('1');
    await client.delete().key(p + 'a');
    await client.put(p + 'b').value('2');
    await client.delete().key(p + 'b');
    await client.put(p + 'end').value('sentinel');
    await eventually(t, () => all.events.length >= 5 && puts.events.length >= 3 && dels.events.length >= 2, 'events');
    assert.deepEqual(brief(all.events), ['put a=1', 'delete a=', 'put b=2', 'delete b=', 'put end=sentinel']);
    assert.deepEqual(brief(puts.events), ['put a=1', 'put b=2', 'put end=sentinel']);
    // the delete-only watcher saw the sentinel's revision pass without a put event
    assert.deepEqual(brief(dels.events), ['delete a=', 'delete b=']);
    assert.equal(all.errors.length + puts.errors.length + dels.errors.length, 0);
  }));

test('withPreviousKV: previous value on update and delete, none on create', () =>
  run('watch/prevkv', async (t, p) => {
    const { client } = t;
    const w = await client.watch().prefix(p).withPreviousKV().create();
    const r = record(w, p);
    const plain = record(await client.watch().prefix(p).create(), p);
    await client.put(p + 'k').value('v1');
    await client.put(p + 'k').value('v2');
    await client.delete().key(p + 'k');
    await eventually(t, () => r.events.length >= 3 && plain.events.length >= 3, 'three events');
    assert.deepEqual(
      r.events.map((e) => [e.type, e.value, e.prev]),
      [
        ['put', 'v1', null],
        ['put', 'v2', 'v1'],
        ['delete', '', 'v2'],
      ],
    );
    assert.deepEqual(
      plain.events.map((e) => e.prev),
      [null, null, null],
    );
  }));

test('seed 002: a watch that starts in the past replays from R inclusive, deletes as events, then live', () =>
  run('watch/seed002', async (t, p) => {
    const { client } = t;
    const start = await client.put(p + 'start').value('x');
    const R = BigInt(start.header.revision);
    for (let i = 1; i <= 5; i++) await client.put(p + `k${i}`).value(String(i));
    const del = await client.delete().key(p + 'k3');

    const w = await client.watch().prefix(p).startRevision(String(R)).create();
    const r = record(w, p);
    await eventually(t, () => r.events.length >= 7, 'the replay');
    await client.put(p + 'k9').value('live');
    await eventually(t, () => r.events.length >= 8, 'the live event');
    // (3) the replay includes the write at revision R itself
    assert.equal(r.events[0]?.mod, R);
    assert.deepEqual(brief(r.events), [
      'put start=x',
      'put k1=1',
      'put k2=2',
      'put k3=3',
      'put k4=4',
      'put k5=5',
      'delete k3=', // (1) a delete is replayed as an event, with the key and an empty value
      'put k9=live',
    ]);
    // (2) k1's value is in the event
    assert.equal(r.events[1]?.value, '1');
    assert.equal(r.events[6]?.mod, BigInt(del.header.revision));
    // revisions strictly increase, no duplicates
    for (let i = 1; i < r.events.length; i++) assert.ok((r.events[i]?.mod ?? 0n) > (r.events[i - 1]?.mod ?? 0n));
    const lastSeen = r.events[r.events.length - 1]?.mod ?? 0n;
    await w.cancel();

    // (4) resuming from the last-seen revision delivers that event again: a duplicate, so resume from last+1
    const again = record(await client.watch().prefix(p).startRevision(String(lastSeen)).create(), p);
    await eventually(t, () => again.events.length >= 1, 'the resumed watch');
    assert.deepEqual(brief(again.events), ['put k9=live']);
    assert.equal(again.events[0]?.mod, lastSeen);
    const next = record(await client.watch().prefix(p).startRevision(String(lastSeen + 1n)).create(), p);
    await client.put(p + 'k10').value('after');
    await eventually(t, () => next.events.length >= 1 && again.events.length >= 2, 'the next event');
    assert.deepEqual(brief(next.events), ['put k10=after']);
  }));

test('seed 002: a watch from a future revision is accepted and waits for it', () =>
  run('watch/future', async (t, p) => {
    const { client } = t;
    const future = (await currentRevision(t)) + 3n;
    const w = await client.watch().prefix(p).startRevision(String(future)).create();
    const r = record(w, p);
    assert.deepEqual(r.errors, []);
    // write until the store passes the future revision; only events at or after it arrive
    const written: bigint[] = [];
    for (let i = 0; written.length === 0 || (written[written.length - 1] ?? 0n) < future + 1n; i++) {
      written.push(BigInt((await client.put(p + 'k').value(String(i))).header.revision));
    }
    const expected = written.filter((rev) => rev >= future);
    await eventually(t, () => r.events.length >= expected.length, 'events from the future revision');
    assert.deepEqual(
      r.events.map((e) => e.mod),
      expected,
    );
    assert.ok(written.some((rev) => rev < future), 'some writes happened before the start revision');
    await w.cancel();
  }));

/** Puts `n` revisions under `key`, `batch` at a time (the order within a batch does not matter). */
async function history(t: Target, key: string, n: number, batch = 100): Promise<void> {
  for (let i = 0; i < n; i += batch) {
    const puts: Promise<unknown>[] = [];
    for (let j = i; j < Math.min(n, i + batch); j++) puts.push(t.client.put(key).value(String(j)).exec());
    await Promise.all(puts);
  }
}

test('seed 003: compaction cancels the watcher still catching up; the current one is untouched; boundary is the compaction revision', () =>
  run('watch/seed003', async (t, p) => {
    const { client } = t;
    const anchor = await client.put(p + 'anchor').value('0');
    const A = BigInt(anchor.header.revision);
    await history(t, p + 'k', 1500);
    const N = await currentRevision(t);
    assert.ok(N - A >= 1500n);

    const behind = record(await client.watch().prefix(p).startRevision(String(A)).create(), p);
    const current = record(await client.watch().prefix(p).create(), p);
    const C = N - 10n;
    await t.compact(String(C));

    await eventually(t, () => behind.errors.length >= 1, 'the behind watcher to be canceled');
    // etcd sends {canceled: true, compact_revision} with no cancel_reason; etcd3 turns that into
    // castGrpcErrorMessage("Watcher canceled: ") — a bare EtcdError that never shows compact_revision
    const err = behind.errors[0];
    assert.ok(err instanceof EtcdError, `got ${String(err)}`);
    assert.equal(err.message, 'Watcher canceled: ');
    assert.ok(behind.events.length < 1501, 'the behind watcher did not get through its replay');
    const canceled = behind.data.length; // no data after the cancel

    // the current watcher is unaffected
    const live = await client.put(p + 'live').value('still here');
    await eventually(t, () => current.events.length >= 1, 'the live event');
    assert.deepEqual(brief(current.events), ['put live=still here']);
    assert.equal(current.events[0]?.mod, BigInt(live.header.revision));
    assert.deepEqual(current.errors, []);
    assert.equal(behind.data.length, canceled);

    // opening a watch at the compacted revision is refused ...
    const refusedAt = async (rev: bigint): Promise<Error> => {
      const w = client.watch().prefix(p).startRevision(String(rev)).watcher();
      const r = record(w, p);
      await eventually(t, () => r.errors.length >= 1, `refusal at ${rev}`);
      return r.errors[0] as Error;
    };
    const refusedA = await refusedAt(A);
    assert.ok(refusedA instanceof EtcdError);
    assert.equal(refusedA.message, 'Watcher canceled: ');
    // ... and the boundary is the compaction revision itself: C opens (and replays C), C-1 does not
    const atC = record(await client.watch().prefix(p).startRevision(String(C)).create(), p);
    await eventually(t, () => atC.events.length >= 1, 'the replay at the compaction revision');
    assert.equal(atC.events[0]?.mod, C);
    assert.deepEqual(atC.errors, []);
    const below = await refusedAt(C - 1n);
    assert.equal(below.message, 'Watcher canceled: ');
  }));

test('a get at a compacted revision fails, while a watch that is current never notices the compaction', () =>
  run('watch/compact-read', async (t, p) => {
    const { client } = t;
    const w = record(await client.watch().prefix(p).create(), p);
    const first = await client.put(p + 'a').value('1');
    await client.put(p + 'a').value('2');
    const last = await client.put(p + 'a').value('3');
    await t.compact(last.header.revision);
    await assert.rejects(client.get(p + 'a').revision(first.header.revision).string(), /required revision has been compacted/);
    await client.put(p + 'a').value('4');
    await eventually(t, () => w.events.length >= 4, 'events');
    assert.deepEqual(
      w.events.map((e) => e.value),
      ['1', '2', '3', '4'],
    );
    assert.deepEqual(w.errors, []);
  }));

// The etcd3 Watcher sets start_revision = header.revision + 1 on every 'connected' and 'data'
// response (lib/watch.js:426,451-452) and resumes from it after the stream breaks. For a watch that
// starts in the past, the created response's header revision is the *current* store revision, and a
// catch-up batch (at most 1000 revisions in etcd) also carries the current revision. So a break
// before or during catch-up makes the watcher resume past history it never received.
test('etcd3 watcher: a stream break before catch-up resumes from the created header revision and skips the replay', () =>
  run(
    'watch/break-before-catchup',
    async (t, p) => {
      const { client } = t;
      const breakStreams = t.breakWatchStreams;
      assert.ok(breakStreams !== undefined, 'the target must be breakable');
      const revs: bigint[] = [];
      for (let i = 1; i <= 5; i++) revs.push(BigInt((await client.put(p + `h${i}`).value(String(i))).header.revision));
      const w = client.watch().prefix(p).startRevision(String(revs[0])).watcher();
      const r = record(w, p);
      w.once('connected', (res: IWatchResponse) => {
        // the created response: header revision is the current revision, not the start revision
        assert.ok(BigInt(res.header.revision) >= (revs[4] ?? 0n));
        breakStreams(); // before the first catch-up batch could be sent
      });
      await eventually(t, () => r.connected >= 2, 'the watcher to reconnect');
      assert.ok(r.disconnects.length >= 1);
      const live = await client.put(p + 'live').value('x');
      await eventually(t, () => r.events.some((e) => e.key === 'live'), 'the live event');
      // outcome: the five historical events were never delivered
      assert.deepEqual(brief(r.events), ['put live=x']);
      assert.equal(r.events[0]?.mod, BigInt(live.header.revision));
      await w.cancel();
    },
    { breakable: true },
  ));

test('etcd3 watcher: a stream break after the first catch-up batch resumes from the batch header revision and skips the rest', () =>
  run(
    'watch/break-mid-catchup',
    async (t, p) => {
      const { client } = t;
      const breakStreams = t.breakWatchStreams;
      assert.ok(breakStreams !== undefined, 'the target must be breakable');
      const anchor = await client.put(p + 'anchor').value('a');
      const A = BigInt(anchor.header.revision);
      await history(t, p + 'k', 1500);
      const N = await currentRevision(t);
      const w = client.watch().prefix(p).startRevision(String(A)).watcher();
      const r = record(w, p);
      let firstBatch: IWatchResponse | undefined;
      w.on('data', (res: IWatchResponse) => {
        if (firstBatch === undefined && res.events.length > 0) {
          firstBatch = res;
          breakStreams();
        }
      });
      await eventually(t, () => r.connected >= 2, 'the watcher to reconnect');
      const live = await client.put(p + 'live').value('x');
      await eventually(t, () => r.events.some((e) => e.key === 'live'), 'the live event');
      await w.cancel();
      assert.ok(firstBatch !== undefined);
      const batchEvents = firstBatch.events.length;
      // etcd cuts catch-up batches at 1000 revisions and stamps them with the current revision
      assert.ok(batchEvents <= 1000, `first batch had ${batchEvents} events`);
      assert.ok(BigInt(firstBatch.header.revision) >= N);
      const mods = r.events.map((e) => e.mod);
      const expectedAll = Number(N - A) + 2; // anchor .. N, plus the live put
      assert.ok(mods.length < expectedAll, `received ${mods.length} of ${expectedAll}: nothing skipped`);
      // what was received: the first batch, then straight to the live event
      assert.equal(mods.length, batchEvents + 1);
      assert.equal(mods[mods.length - 1], BigInt(live.header.revision));
      const lastOfBatch = mods[batchEvents - 1] ?? 0n;
      assert.ok(lastOfBatch < N, 'the skipped revisions lie between the batch and the header revision');
    },
    { breakable: true },
  ));

test('etcd3 watcher: from a start revision, caught up, then broken twice: every event exactly once, in order', () =>
  run(
    'watch/break-live',
    async (t, p) => {
      const { client } = t;
      const breakStreams = t.breakWatchStreams;
      assert.ok(breakStreams !== undefined, 'the target must be breakable');
      const revs: bigint[] = [];
      const put = async (k: string, v: string): Promise<void> => {
        revs.push(BigInt((await client.put(p + k).value(v)).header.revision));
      };
      await put('h1', '1');
      await put('h2', '2');
      revs.push(BigInt((await client.delete().key(p + 'h1')).header.revision));
      const w = client.watch().prefix(p).startRevision(String(revs[0])).watcher();
      const r = record(w, p);
      await eventually(t, () => r.events.length >= 3, 'the replay');
      await put('live1', 'a');
      await eventually(t, () => r.events.length >= 4, 'the first live event');
      assert.ok(r.connected >= 1);

      breakStreams();
      // written while the watcher is disconnected (or reconnecting): must come in its catch-up
      await put('gap', 'b');
      await client.put('etcd3-test/\u0000elsewhere').value('outside the watched range');
      await eventually(t, () => r.connected >= 2, 'the watcher to reconnect');
      await put('live2', 'c');
      await eventually(t, () => r.events.some((e) => e.key === 'live2'), 'the event after the reconnect');

      breakStreams();
      await eventually(t, () => r.connected >= 3, 'the second reconnect');
      await put('live3', 'd');
      await eventually(t, () => r.events.some((e) => e.key === 'live3'), 'the event after the second reconnect');
      await client.delete().key('etcd3-test/\u0000elsewhere');

      assert.ok(r.disconnects.length >= 2);
      assert.deepEqual(brief(r.events), [
        'put h1=1',
        'put h2=2',
        'delete h1=',
        'put live1=a',
        'put gap=b',
        'put live2=c',
        'put live3=d',
      ]);
      assert.deepEqual(
        r.events.map((e) => e.mod),
        revs,
      );
      assert.deepEqual(r.errors, []);
      await w.cancel();
    },
    { breakable: true },
  ));

test('namespaced watchers: keys relative to the namespace, the prefix is a range, prev_kv unprefixed too', () =>
  run('watch/namespace', async (t, p) => {
    const { client } = t;
    const ns = client.namespace(p + 'ns/');
    const key = record(await ns.watch().key('a').withPreviousKV().create(), '');
    const prefix = record(await ns.watch().prefix('d/').create(), '');
    const whole = record(await ns.watch().prefix('').create(), '');
    const outer = record(await client.watch().prefix(p).create(), p);
    await ns.put('a').value('1');
    await ns.put('a').value('2');
    await ns.put('d/x').value('3');
    await client.put(p + 'outside').value('4');
    await client.put(p + 'ns').value('5'); // the namespace without its slash: outside
    await ns.delete().key('a');
    await ns.put('zz').value('6');
    await eventually(t, () => outer.events.length >= 7 && whole.events.length >= 5, 'events');
    await eventually(t, () => key.events.length >= 3 && prefix.events.length >= 1, 'the narrow watchers');
    assert.deepEqual(brief(key.events), ['put a=1', 'put a=2', 'delete a=']);
    assert.deepEqual(
      key.events.map((e) => e.prev),
      [null, '1', '2'],
    );
    const prevKeys = key.data.flatMap((d) => d.events.map((e) => e.prev_kv?.key.toString() ?? null));
    assert.deepEqual(prevKeys, [null, 'a', 'a']);
    assert.deepEqual(brief(prefix.events), ['put d/x=3']);
    assert.deepEqual(brief(whole.events), ['put a=1', 'put a=2', 'put d/x=3', 'delete a=', 'put zz=6']);
    assert.deepEqual(brief(outer.events), [
      'put ns/a=1',
      'put ns/a=2',
      'put ns/d/x=3',
      'put outside=4',
      'put ns=5',
      'delete ns/a=',
      'put ns/zz=6',
    ]);
    // a namespaced watch from a start revision replays only the namespace's history
    const from = outer.events[0]?.mod ?? 0n;
    const replay = record(await ns.watch().prefix('').startRevision(String(from)).create(), '');
    await eventually(t, () => replay.events.length >= 5, 'the replay');
    assert.deepEqual(brief(replay.events), brief(whole.events));
  }));
