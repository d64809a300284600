// Memory of a watch stream whose client reads slowly or not at all is bounded as in etcd: one transport
// window of rendered responses plus the channel of 128; beyond that its watchers are victims holding one
// batch each — and once the client reads again, every event still arrives, in order, exactly once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MvccStore, utf8 } from '../../src/mvcc/index.js';
import { WatchableStore, type WatchResponse } from '../../src/watch/index.js';
import { checkProperty } from './harness.js';

type Step = { readonly t: 'put'; readonly key: number; readonly size: number } | { readonly t: 'read'; readonly n: number } | { readonly t: 'sync' };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 12, arbitrary: fc.record({ t: fc.constant('put' as const), key: fc.nat({ max: 7 }), size: fc.integer({ min: 0, max: 3000 }) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('read' as const), n: fc.integer({ min: 0, max: 40 }) }) },
  { weight: 1, arbitrary: fc.constant({ t: 'sync' as const }) },
);

const configArb = fc.record({
  window: fc.constantFrom(0, 1000, 64 * 1024),
  chanBufLen: fc.constantFrom(1, 16, 128),
  watchers: fc.integer({ min: 1, max: 3 }),
});

test('a slow or silent reader holds at most one window plus the channel; reading again delivers every event once, in order', () => {
  checkProperty(
    fc.property(configArb, fc.array(stepArb, { maxLength: 400 }), (cfg, steps) => {
      const kv = new MvccStore();
      const ws = new WatchableStore(kv, { sendWindowBytes: cfg.window, chanBufLen: cfg.chanBufLen, watchBatchMaxRevs: 50 });
      const st = ws.newWatchStream();
      const ids: number[] = [];
      for (let i = 0; i < cfg.watchers; i++) ids.push(st.watch({ key: utf8('/k/'), rangeEnd: utf8('/k0') }).watchId);
      const got: WatchResponse[] = [];
      for (const s of steps) {
        if (s.t === 'put') {
          kv.put({ key: utf8(`/k/${s.key}`), value: new Uint8Array(s.size) });
        } else if (s.t === 'read') got.push(...st.read(s.n));
        else {
          ws.moveVictims();
          ws.syncWatchers();
        }
        assert.ok(st.channelLength <= cfg.chanBufLen, `channel ${st.channelLength} > ${cfg.chanBufLen}`);
        // One window plus one response: the send loop sent the newest response while the window had room.
        // (A bound of the window plus the largest value fails: a catch-up response holds several events.)
        const { bytes, newest } = st.inTransport;
        if (cfg.window === 0) assert.equal(bytes, 0, `transport ${bytes} B on an unbuffered transport`);
        else assert.ok(bytes - newest < cfg.window, `transport ${bytes} B: ${bytes - newest} B before its newest response, window ${cfg.window} B`);
        let batches = 0;
        for (const b of ws.victims) batches += b.size;
        assert.ok(batches <= cfg.watchers, `${batches} victim batches for ${cfg.watchers} watchers`);
      }
      for (let round = 0; round < 10_000 && (ws.unsynced.size > 0 || ws.victims.length > 0 || st.pending > 0); round++) {
        got.push(...st.take());
        ws.moveVictims();
        ws.syncWatchers();
      }
      got.push(...st.take());
      const want = Array.from({ length: kv.currentRevision - 1 }, (_, i) => i + 2);
      for (const id of ids) {
        const revs = got.filter((r) => r.watchId === id).flatMap((r) => r.events.map((e) => e.kv.modRevision));
        assert.deepEqual(revs, want, `watcher ${id}`);
      }
    }),
    { file: 'test/properties/send_window.property.test.ts', numRuns: 150 },
  );
});
