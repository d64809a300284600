/**
 * Property: a watch response is split as etcd's sendFragments splits it (v3rpc/watch.go), and sized as
 * the send window counts it, by the naive references of model/reference_watch_size.ts. The watch
 * properties judge the same through whole runs, but their values are small and their limit fixed, so a
 * response exactly at the limit, an event alone above it, or a lease ID's bytes seldom show there; this
 * one builds them: events of any size (PUT and DELETE, with and without prevKv and a lease, revisions up
 * to 2^40), and limits at the response's own size, one either side, at a prefix of its events' size, and
 * below a single event's (issue #35: the comparisons at the limit survived the runs of the others).
 *
 * Runs: ETCDSIM_NUM_RUNS (default 300). Replay: ETCDSIM_SEED=<seed> ETCDSIM_PATH=<path> (see harness.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';

import type { KeyValue } from '../../src/mvcc/index.js';
import type { WatchEvent, WatchResponse } from '../../src/watch/index.js';
import { fragmentResponse, watchResponseSize } from '../../src/watch/fragment.js';
import { checkProperty } from './harness.js';
import { referenceFragments, referenceResponseSize } from './model/reference_watch_size.js';

const FILE = 'test/properties/fragment.property.test.ts';

const revArb = fc.oneof(fc.integer({ min: 0, max: 200 }), fc.integer({ min: 0, max: 2 ** 40 }));
const kvArb: fc.Arbitrary<KeyValue> = fc.record({
  key: fc.uint8Array({ minLength: 1, maxLength: 40 }),
  createRevision: revArb,
  modRevision: revArb,
  version: fc.integer({ min: 0, max: 300 }),
  value: fc.oneof(fc.uint8Array({ maxLength: 20 }), fc.uint8Array({ maxLength: 300 })),
  lease: fc.oneof(fc.constant(0n), fc.bigInt({ min: 1n, max: 2n ** 63n - 1n })),
});
const eventArb: fc.Arbitrary<WatchEvent> = fc.record({ type: fc.constantFrom('PUT' as const, 'DELETE' as const), kv: kvArb, prevKv: fc.option(kvArb, { nil: undefined }) });

const responseArb: fc.Arbitrary<WatchResponse> = fc.record({
  revision: revArb,
  watchId: fc.oneof(fc.integer({ min: 0, max: 300 }), fc.constant(-1)),
  created: fc.boolean(),
  canceled: fc.boolean(),
  compactRevision: fc.oneof(fc.constant(0), revArb),
  cancelReason: fc.oneof(fc.constant(''), fc.string({ maxLength: 30 }).map((s) => s.replace(/[^\x20-\x7e]/g, '.'))),
  fragment: fc.constant(false),
  events: fc.array(eventArb, { maxLength: 8 }),
});

/** Where the limit lies: at the response's size plus `delta`, at the size of its first `prefix` events, or anywhere. */
const limitArb = fc.record({ at: fc.constantFrom('whole' as const, 'prefix' as const, 'any' as const), delta: fc.integer({ min: -1, max: 1 }), prefix: fc.nat(), any: fc.integer({ min: 1, max: 3000 }) });

test('a watch response splits where etcd\'s sendFragments splits it, and is sized as the send window counts it', () => {
  checkProperty(
    fc.property(responseArb, limitArb, (r, l) => {
      const size = referenceResponseSize(r);
      assert.equal(watchResponseSize(r), size, 'the size of the whole response');
      const prefix = r.events.slice(0, r.events.length === 0 ? 0 : (l.prefix % r.events.length) + 1);
      const limit = Math.max(1, (l.at === 'whole' ? size : l.at === 'prefix' ? referenceResponseSize({ ...r, events: prefix }) : l.any) + l.delta);
      const pieces = fragmentResponse(r, limit);
      assert.deepEqual(
        pieces.map((p) => p.events.length),
        referenceFragments(r, limit),
        `pieces of ${r.events.length} events, ${size} B, at a limit of ${limit} B`,
      );
      assert.deepEqual(pieces.flatMap((p) => p.events), r.events, 'the events, whole and in order');
      pieces.forEach((p, i) => {
        assert.deepEqual({ ...p, events: r.events, fragment: false }, { ...r }, 'every piece keeps the response\'s other fields');
        assert.equal(p.fragment, i < pieces.length - 1, `piece ${i} of ${pieces.length} is flagged fragment`);
        assert.equal(watchResponseSize(p), referenceResponseSize(p), `the size of piece ${i}`);
      });
    }),
    { file: FILE, numRuns: 300 },
  );
});
