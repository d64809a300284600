/**
 * The shadow's memory under a long run (src/shadow/compaction.ts): the simulator keeps every revision etcd
 * keeps, so what it retains stays flat exactly when it follows etcd's compactions — those an application
 * sends through the shadow, and those it never sees (an operator's or etcd's own auto-compaction, here a
 * client talking to etcd directly). Retained revisions and bytes are counted, not the resident set.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { connectEtcd, type EtcdGrpcClient } from '../../src/grpc/client.js';
import type { ShadowRetained } from '../../src/shadow/index.js';
import type * as M from '../../src/server/messages.js';
import { requireCommands } from '../support/prerequisites.js';
import { startRig, summary, type ShadowRig } from './helpers.js';

const skip = requireCommands(['etcd']);
const KEYS = 20;
const PUTS = 100;
const ROUNDS = 4;

let rig: ShadowRig;
before(async () => {
  // No timer: etcd is asked for its compactions only by drained() and by a read it refused as compacted.
  if (skip === false) rig = await startRig({ compactionProbeMs: 0 });
});
after(async () => {
  await rig?.close();
});

test("a long run of puts: the shadow follows etcd's compactions, through it or beside it, and what it retains stays flat", { skip }, async () => {
  const app = connectEtcd(rig.shadow.endpoint);
  const beside: EtcdGrpcClient = connectEtcd(rig.etcd.address);
  const value = Buffer.alloc(200, 'v');
  const compacted: ShadowRetained[] = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      let rev = 0;
      for (let i = 0; i < PUTS; i++) rev = Number((await app.kv.put({ key: Buffer.from(`/long/${i % KEYS}`), value })).header.revision);
      assert.equal(await rig.shadow.drained(), true, summary(rig));
      const grown = rig.shadow.retained();
      assert.ok(grown.revisions >= PUTS, `before the compaction the simulator holds every put: ${JSON.stringify(grown)}`);
      if (round % 2 === 1) {
        await app.kv.compact({ revision: String(rev) });
      } else {
        // Beside the shadow: a read below the compaction through it is refused by etcd and not yet by the
        // simulator — not a divergence, a compaction to follow.
        await beside.kv.compact({ revision: String(rev) });
        await assert.rejects(app.kv.range({ key: Buffer.from('/long/0'), revision: String(rev - 1) }), /required revision has been compacted/);
      }
      assert.equal(await rig.shadow.drained(), true, summary(rig));
      // The same read again: now both refuse it, and it is compared.
      await assert.rejects(app.kv.range({ key: Buffer.from('/long/0'), revision: String(rev - 1) }), /required revision has been compacted/);
      assert.equal(await rig.shadow.drained(), true, summary(rig));
      const held = rig.shadow.retained();
      assert.equal(held.compactRevision, rev, JSON.stringify(held));
      compacted.push(held);
    }
  } finally {
    app.close();
    beside.close();
  }
  assert.deepEqual(rig.divergences, [], summary(rig));
  const first = compacted[0]!;
  const last = compacted.at(-1)!;
  // One revision per key after each compaction, the same bytes, nothing waiting: flat from the first round to the last.
  assert.equal(first.revisions, KEYS, JSON.stringify(first));
  assert.equal(last.revisions, first.revisions, JSON.stringify(compacted));
  assert.equal(last.bytes, first.bytes, JSON.stringify(compacted));
  assert.equal(last.waitingSteps + last.waitingEvents, 0, JSON.stringify(last));
  assert.equal(last.compactionsFound, ROUNDS / 2, JSON.stringify(last));
  const range = rig.shadow.report.rpcs.get('KV.Range');
  assert.equal(range?.notCompared.get('etcd compacted beyond the simulator'), ROUNDS / 2, summary(rig));
  assert.equal(range?.compared, ROUNDS, summary(rig));
});

/** The responses of one watch through `endpoint` until `done` says enough (or 10 s pass). */
async function watchResponses(endpoint: string, req: M.WatchRequest, done: (rs: M.WatchResponse[]) => boolean, as?: { token: string }): Promise<M.WatchResponse[]> {
  const app = connectEtcd(endpoint);
  const call = app.watch.watch(as);
  const got: M.WatchResponse[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no end of the watch: ${JSON.stringify(got)}`)), 10_000);
      call.onResponse((rs) => {
        got.push(...rs);
        if (done(got)) {
          clearTimeout(timer);
          resolve();
        }
      });
      call.write(req);
    });
  } finally {
    call.cancel();
    app.close();
  }
  return got;
}

test("a watch from below a compaction the shadow has not followed yet: it follows etcd's first, then both cancel the watch alike", { skip }, async () => {
  const app = connectEtcd(rig.shadow.endpoint);
  const beside = connectEtcd(rig.etcd.address);
  let rev = 0;
  try {
    for (let i = 0; i < 10; i++) rev = Number((await app.kv.put({ key: Buffer.from(`/wc/${i % 3}`), value: Buffer.from(String(i)) })).header.revision);
    assert.equal(await rig.shadow.drained(), true, summary(rig));
    await beside.kv.compact({ revision: String(rev - 2) });
  } finally {
    app.close();
    beside.close();
  }
  const before = rig.shadow.report.rpcs.get('Watch.Watch')?.compared ?? 0;
  // Below the compaction: etcd creates the watch and cancels it naming its compaction revision.
  const below = await watchResponses(rig.shadow.endpoint, { create_request: { key: Buffer.from('/wc/'), range_end: Buffer.from('/wc0'), start_revision: String(rev - 5) } }, (rs) => rs.some((r) => r.canceled));
  assert.equal(below.at(-1)?.compact_revision, String(rev - 2), JSON.stringify(below));
  // At the compaction revision itself: readable, its events (the last two puts and the one at the compaction) stream.
  const at = await watchResponses(rig.shadow.endpoint, { create_request: { key: Buffer.from('/wc/'), range_end: Buffer.from('/wc0'), start_revision: String(rev - 2) } }, (rs) => rs.reduce((n, r) => n + r.events.length, 0) >= 3);
  assert.equal(at.some((r) => r.canceled), false, JSON.stringify(at));
  assert.equal(await rig.shadow.drained(), true, summary(rig));
  assert.deepEqual(rig.divergences, [], summary(rig));
  assert.equal(rig.shadow.retained().compactRevision, rev - 2, summary(rig));
  // Both watches compared: created and canceled for the first, created and three events for the second.
  assert.equal((rig.shadow.report.rpcs.get('Watch.Watch')?.compared ?? 0) - before, 6, summary(rig));
});

/**
 * The race of a held watch (BelowCompaction, stream_calls.ts) with a Compact through the shadow: sent
 * together, etcd creates the watch, compacts, and cancels the watch at its first sync — naming the
 * compaction — while a physical Compact is answered only once its batches are deleted, after that cancel.
 * The shadow then followed the cancel's compaction itself, and the Compact's own step came second and was
 * refused by the simulator as compacted (2 of 4 rounds diverged so before the fix).
 */
test('a watch from an old revision and a Compact through the shadow in the same instant: the simulator applies them in the order etcd did', { skip }, async () => {
  const app = connectEtcd(rig.shadow.endpoint);
  const beside = connectEtcd(rig.etcd.address);
  const outcomes: string[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // History for a physical compaction to take its time over: etcd answers a physical Compact once its
      // batches are deleted, while the watch's cancel comes at its first sync after the compaction began.
      for (let t = 0; t < 40; t++) {
        await beside.kv.txn({ compare: [], failure: [], success: Array.from({ length: 128 }, (_, i) => ({ request_put: { key: Buffer.from(`/bulk/${i}`), value: Buffer.alloc(100, 'b') } })) });
      }
      let rev = 0;
      for (let i = 0; i < 3; i++) rev = Number((await app.kv.put({ key: Buffer.from(`/same/${i}`), value: Buffer.from(String(round)) })).header.revision);
      assert.equal(await rig.shadow.drained(), true, summary(rig));
      const call = app.watch.watch();
      const got: M.WatchResponse[] = [];
      const ended = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no end of the watch: ${JSON.stringify(got)}`)), 10_000);
        call.onResponse((rs) => {
          got.push(...rs);
          if (got.some((r) => r.canceled || r.events.length > 0)) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
      call.write({ create_request: { key: Buffer.from('/same/'), range_end: Buffer.from('/same0'), start_revision: String(rev - 2) } });
      const compacted = app.kv.compact({ revision: String(rev), physical: true });
      await Promise.all([ended, compacted]);
      outcomes.push(got.some((r) => r.canceled) ? 'canceled' : 'streamed');
      assert.equal(await rig.shadow.drained(), true, `round ${round}: ${JSON.stringify(got)}\n${summary(rig)}`);
      call.cancel();
      assert.equal(rig.shadow.retained().compactRevision, rev, summary(rig));
    }
  } finally {
    app.close();
    beside.close();
  }
  assert.deepEqual(rig.divergences, [], `${outcomes.join(' ')}\n${summary(rig)}`);
});

test("with auth on, etcd refuses the shadow's own reads: its compaction probe reads as the application last did", { skip }, async () => {
  const app = connectEtcd(rig.shadow.endpoint);
  const beside = connectEtcd(rig.etcd.address);
  const key = (k: string): Buffer => Buffer.from(`/authed/${k}`);
  try {
    await app.auth.userAdd({ name: 'root', password: 'rootpw', options: { no_password: false } });
    await app.auth.roleAdd({ name: 'root' });
    await app.auth.userGrantRole({ user: 'root', role: 'root' });
    await app.auth.userAdd({ name: 'app', password: 'apppw', options: { no_password: false } });
    await app.auth.roleAdd({ name: 'writer' });
    await app.auth.roleGrantPermission({ name: 'writer', perm: { permType: 'READWRITE', key: key(''), range_end: Buffer.from('/authed0') } });
    await app.auth.userGrantRole({ user: 'app', role: 'writer' });
    await app.auth.authEnable({});
    const as = { token: (await app.auth.authenticate({ name: 'app', password: 'apppw' })).token };
    const root = { token: (await beside.auth.authenticate({ name: 'root', password: 'rootpw' })).token };
    // etcd refuses a read without a token now: the shadow's probe of its own is refused too.
    await assert.rejects(beside.kv.range({ key: Buffer.from([0]) }), /user name is empty/);
    const puts = async (): Promise<number> => {
      let rev = 0;
      for (let i = 0; i < 6; i++) rev = Number((await app.kv.put({ key: key(String(i % 2)), value: Buffer.from(String(i)) }, as)).header.revision);
      await app.kv.range({ key: key('0') }, as);
      assert.equal(await rig.shadow.drained(), true, summary(rig));
      return rev;
    };
    // A compaction beside the shadow, then a watch (with the application's token) from below it.
    let rev = await puts();
    await beside.kv.compact({ revision: String(rev - 1) }, root);
    const watched = await watchResponses(rig.shadow.endpoint, { create_request: { key: key(''), range_end: Buffer.from('/authed0'), start_revision: String(rev - 3) } }, (rs) => rs.some((r) => r.canceled), as);
    assert.equal(watched.at(-1)?.compact_revision, String(rev - 1), JSON.stringify(watched));
    assert.equal(await rig.shadow.drained(), true, summary(rig));
    assert.equal(rig.shadow.retained().compactRevision, rev - 1, summary(rig));
    // Another beside it, then a read below it: the probe finds the compaction reading as that application.
    const found = rig.shadow.retained().compactionsFound;
    rev = await puts();
    await beside.kv.compact({ revision: String(rev - 1) }, root);
    await assert.rejects(app.kv.range({ key: key('0'), revision: String(rev - 3) }, as), /required revision has been compacted/);
    assert.equal(await rig.shadow.drained(), true, summary(rig));
    assert.equal(rig.shadow.retained().compactRevision, rev - 1, summary(rig));
    assert.equal(rig.shadow.retained().compactionsFound, found + 1, summary(rig));
  } finally {
    app.close();
    beside.close();
  }
  assert.deepEqual(rig.divergences, [], summary(rig));
});
