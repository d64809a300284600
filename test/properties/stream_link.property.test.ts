/**
 * Property: a watch on a cluster member keeps every watch guarantee (src/watch/guarantees.ts: each revision
 * once, in order, nothing skipped, progress never ahead of what was sent) whatever its client's link and its
 * member do meanwhile — dropped and restored, delayed, the member paused and resumed — because a stream rides
 * them as a TCP connection does (src/cluster/stream_link.ts): what waits is late, never lost. And once
 * the link is back and the member runs, the client has every revision the member applied.
 *
 * Runs: ETCDSIM_NUM_RUNS (default 60). Replay: ETCDSIM_SEED=<seed> ETCDSIM_PATH=<path> (see harness.ts).
 */
import { test } from 'node:test';
import fc from 'fast-check';

import { EtcdCluster } from '../../src/cluster/index.js';
import { VirtualClock } from '../../src/sim/index.js';
import { checkWatch, formatViolations, recordHistory } from '../../src/watch/guarantees.js';
import type { WatchCreateRequest, WatchResponse } from '../../src/watch/types.js';
import { checkAsyncProperty } from './harness.js';
import { b, KEYS, PREFIX, PREFIX_END, responseIn } from './watch_harness.js';

const FILE = 'test/properties/stream_link.property.test.ts';
/** The watch's member (a follower: pausing it leaves the leadership alone) and its client's name. */
const MEMBER = 2;
const CLIENT = 'app';

type Step =
  | { readonly t: 'put'; readonly key: string }
  | { readonly t: 'tick'; readonly ms: number }
  | { readonly t: 'drop' }
  | { readonly t: 'delay'; readonly ms: number }
  | { readonly t: 'restore' }
  | { readonly t: 'pause' }
  | { readonly t: 'resume' }
  | { readonly t: 'progress' };

interface Scenario {
  readonly seed: number;
  readonly progressNotify: boolean;
  readonly prevKv: boolean;
  /** A small channel, so that held responses make victims. */
  readonly chanBufLen: number;
  readonly steps: readonly Step[];
}

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...KEYS).map((key) => ({ t: 'put' as const, key })) },
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 300 }).map((ms) => ({ t: 'tick' as const, ms })) },
  { weight: 1, arbitrary: fc.constant({ t: 'drop' as const }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 120 }).map((ms) => ({ t: 'delay' as const, ms })) },
  { weight: 1, arbitrary: fc.constant({ t: 'restore' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'pause' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'resume' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'progress' as const }) },
);

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  seed: fc.integer({ min: 0, max: 1_000_000 }),
  progressNotify: fc.boolean(),
  prevKv: fc.boolean(),
  chanBufLen: fc.integer({ min: 1, max: 8 }),
  steps: fc.array(stepArb, { minLength: 1, maxLength: 40 }),
});

async function run(sc: Scenario): Promise<void> {
  const c = new EtcdCluster({ clock: new VirtualClock(), seed: sc.seed, watchChanBufLen: sc.chanBufLen, watchProgressNotifyIntervalMs: 200 });
  try {
    const { history } = recordHistory(c.members[0]!.server.mvcc);
    const request: WatchCreateRequest = { key: b(PREFIX), rangeEnd: b(PREFIX_END), startRevision: 0, progressNotify: sc.progressNotify, prevKv: sc.prevKv };
    const responses: WatchResponse[] = [];
    const call = c.connect(MEMBER, { client: CLIENT }).watch();
    call.onResponse((rs) => {
      for (const r of rs) responses.push(responseIn(r));
    });
    let ended: string | undefined;
    call.onEnd((err) => (ended = err === undefined ? 'OK' : `${err.code} ${err.details}`));
    call.write({ create_request: { key: b(PREFIX), range_end: b(PREFIX_END), progress_notify: sc.progressNotify, prev_kv: sc.prevKv } });
    const leader = c.member(0).services;
    for (const s of sc.steps) {
      switch (s.t) {
        case 'put':
          await leader.kv.put({ key: b(s.key), value: b(`v${c.clock.now()}`) });
          break;
        case 'tick':
          await c.advance(s.ms);
          break;
        case 'drop':
          c.dropLink(CLIENT, MEMBER);
          break;
        case 'delay':
          c.delayLink(CLIENT, MEMBER, s.ms);
          break;
        case 'restore':
          c.restoreLink(CLIENT, MEMBER);
          break;
        case 'pause':
          c.pause(MEMBER);
          break;
        case 'resume':
          c.resume(MEMBER);
          break;
        case 'progress':
          call.write({ progress_request: {} });
          break;
      }
    }
    // The link back, the member running: everything it applied reaches the client, late but whole.
    c.restoreLink(CLIENT, MEMBER);
    c.resume(MEMBER);
    for (let i = 0; i < 20; i++) await c.advance(500);
    const member = c.members[MEMBER]!.server.mvcc.currentRevision;
    const problems: string[] = [];
    if (ended !== undefined) problems.push(`the watch ended: ${ended}`);
    if (responses[0]?.created !== true) problems.push('no created response');
    const v = checkWatch(history, request, responses, { drainedThrough: member });
    if (v.length > 0) problems.push(formatViolations(v));
    if (problems.length > 0) throw new Error(`${problems.join('\n')}\n  member ${MEMBER} at revision ${member}; ${responses.length} responses`);
  } finally {
    c.close();
  }
}

test('a watch whose link drops, slows and whose member stops keeps every watch guarantee and, once both are back, has every revision', async () => {
  await checkAsyncProperty(
    fc.asyncProperty(scenarioArb, (sc) => run(sc)),
    { file: FILE, numRuns: 60 },
  );
});
