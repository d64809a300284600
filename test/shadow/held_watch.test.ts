/**
 * A watch from an old revision that etcd 3.4.23 synced before a compaction (src/shadow/stream_calls.ts,
 * BelowCompaction): etcd's sync loop takes a watch that is behind within about 100 ms, and a compaction after
 * that leaves it streaming — no cancel comes. The shadow asks etcd whether it still reads the watch's start
 * revision only once every Compact through it is answered, so a slow physical Compact in flight makes it ask
 * after a second compaction etcd applied after its sync. Two cases:
 *  - a watch whose range had no events: etcd sends nothing more for it until its next event. The shadow held
 *    the stream until the stream ended or the watch got an event (drained() false meanwhile); now two of
 *    etcd's sync passes without its cancel (the shadow's own watch from below the compaction is canceled at
 *    each) say it was synced;
 *  - a watch with events: etcd streams them, but the simulator had already applied the second compaction, so
 *    the stream was no longer compared; now the simulator's watch starts at its compaction revision and etcd's
 *    events below it are counted as not compared.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { connectEtcd, type EtcdGrpcClient } from '../../src/grpc/client.js';
import type * as M from '../../src/server/messages.js';
import { requireCommands } from '../support/prerequisites.js';
import { startRig, summary, type ShadowRig } from './helpers.js';

const skip = requireCommands(['etcd']);

let rig: ShadowRig;
before(async () => {
  if (skip === false) rig = await startRig({ compactionProbeMs: 0 });
});
after(async () => {
  await rig?.close();
});

/** A watch stream through the shadow, its responses collected. */
function stream(app: EtcdGrpcClient): { call: ReturnType<EtcdGrpcClient['watch']['watch']>; got: M.WatchResponse[] } {
  const call = app.watch.watch();
  const got: M.WatchResponse[] = [];
  call.onResponse((rs) => got.push(...rs));
  return { call, got };
}

/** Waits (up to 30 s: etcd's answers through the shadow, on a loaded machine) until `done`. */
async function until(what: string, done: () => boolean, context: () => string): Promise<void> {
  for (let i = 0; i < 3000 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(done(), `${what}\n${context()}`);
}

const events = (got: readonly M.WatchResponse[], id: string): number => got.filter((r) => String(r.watch_id) === id).reduce((n, r) => n + r.events.length, 0);

test('watches etcd synced before a compaction the shadow learned of later: with no events the stream is released, with events the simulator starts at its compaction; both compared on', { skip }, async () => {
  const app = connectEtcd(rig.shadow.endpoint);
  const beside = connectEtcd(rig.etcd.address);
  // One stream: a watch of a range without events, then one of a range with three (IDs 0 and 1); another: a
  // watch of the busy range alone (ID 0).
  let quiet = stream(app);
  let busy = stream(app);
  // The watches' start, and the compaction past it the simulator applied first.
  let from = 0;
  let compacted = 0;
  const context = (): string => `quiet: ${JSON.stringify(quiet.got)}\nbusy: ${JSON.stringify(busy.got)}\n${summary(rig)}`;
  try {
    let reproduced = false;
    // A physical Compact is answered once its batches (1 000 revisions each, 10 ms apart) are deleted: enough
    // history makes it outlast etcd's first sync of the watches; more is written until it does.
    for (let attempt = 1; attempt <= 4 && !reproduced; attempt++) {
      if (attempt > 1) {
        quiet.call.cancel();
        busy.call.cancel();
        [quiet, busy] = [stream(app), stream(app)];
      }
      for (let t = 0; t < 100 * attempt; t++) {
        await beside.kv.txn({ compare: [], failure: [], success: Array.from({ length: 128 }, (_, i) => ({ request_put: { key: Buffer.from(`/bulk/${i}`), value: Buffer.from('b') } })) });
      }
      const below = Number((await app.kv.put({ key: Buffer.from('/mark'), value: Buffer.from(String(attempt)) })).header.revision);
      for (let i = 0; i < 3; i++) await app.kv.put({ key: Buffer.from(`/busy/${i}`), value: Buffer.from(String(attempt)) });
      assert.equal(await rig.shadow.drained(), true, context());
      let slowDone = false;
      const slow = app.kv.compact({ revision: String(below), physical: true }).then(() => (slowDone = true));
      from = below + 1;
      quiet.call.write({ create_request: { key: Buffer.from('/quiet/'), range_end: Buffer.from('/quiet0'), start_revision: String(from) } });
      quiet.call.write({ create_request: { key: Buffer.from('/busy/'), range_end: Buffer.from('/busy0'), start_revision: String(from) } });
      busy.call.write({ create_request: { key: Buffer.from('/busy/'), range_end: Buffer.from('/busy0'), start_revision: String(from) } });
      // etcd synced all three: the busy watches' events came (the quiet watch, before one of them on its
      // stream, was taken in the same sync pass or an earlier one).
      await until('the busy watches streamed', () => events(quiet.got, '1') === 3 && events(busy.got, '0') === 3, context);
      // A compaction past the watches' start through the shadow, answered at once (not physical): the
      // simulator applies it now, while the shadow still waits for the slow Compact before it asks etcd.
      compacted = Number((await app.kv.range({ key: Buffer.from('/mark') })).header.revision);
      await app.kv.compact({ revision: String(compacted) });
      reproduced = !slowDone;
      await slow;
    }
    assert.ok(reproduced, `a physical Compact outlasting etcd's first sync of the watches, in 4 attempts\n${context()}`);
    assert.equal(await rig.shadow.drained(), true, `the held stream was released\n${context()}`);
    assert.equal(rig.shadow.unmatched(), 0, context());
    // Both streams are compared on: the next event of each of the three watches.
    const compared = rig.shadow.report.rpcs.get('Watch.Watch')?.compared ?? 0;
    const total = (got: M.WatchResponse[]): number => got.reduce((n, r) => n + r.events.length, 0);
    const [quietBefore, busyBefore] = [total(quiet.got), total(busy.got)];
    await app.kv.put({ key: Buffer.from('/quiet/a'), value: Buffer.from('1') });
    await app.kv.put({ key: Buffer.from('/busy/0'), value: Buffer.from('next') });
    await until('etcd sent the watches their next events', () => total(quiet.got) === quietBefore + 2 && total(busy.got) === busyBefore + 1, context);
    assert.equal(await rig.shadow.drained(), true, context());
    assert.equal((rig.shadow.report.rpcs.get('Watch.Watch')?.compared ?? 0) - compared, 3, context());
  } finally {
    quiet.call.cancel();
    busy.call.cancel();
    app.close();
    beside.close();
  }
  assert.deepEqual(rig.divergences, [], context());
  assert.equal(rig.shadow.unmatched(), 0, context());
  // Nothing stopped being compared: what is left out is the busy watches' events below the simulator's
  // compaction (the one at it compares: the simulator's watch starts there).
  const w = rig.shadow.report.rpcs.get('Watch.Watch');
  const below = "an event below the simulator's compaction (etcd synced the watch before it)";
  assert.deepEqual([...(w?.notCompared.keys() ?? [])].filter((why) => why !== below), [], context());
  assert.equal(w?.notCompared.get(below), 2 * (compacted - from), context());
  // The slow Compact, answered after the later one it preceded on etcd, is not asked of the simulator.
  assert.equal(rig.shadow.report.rpcs.get('KV.Compact')?.notCompared.get('a physical Compact answered after a later compaction'), 1, context());
});
