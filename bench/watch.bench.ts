/**
 * Watch benchmarks, each against a same-run baseline:
 *  - fan-out of one put to 10k synced watchers on one key, per delivered event, vs a bare loop that pushes
 *    one response object per watcher into its own array (the least any fan-out must do);
 *  - catch-up of one unsynced watcher over 100k revisions, per event, vs a bare walk over the same
 *    events in the store's revision log;
 *  - watcher registration and cancel, vs a bare Map set / delete of a watcher record.
 * etcd 3.4.23's Go engine on this kind of machine (from the issue): ~5.2 µs per watcher for fan-out,
 * ~3.1 µs per registration, ~1.2 µs per cancel.
 */
import { MvccStore, utf8 } from '../src/mvcc/index.js';
import { WatchableStore, type WatchStream } from '../src/watch/index.js';
import { consume, measurePair, row, type BenchContext, type BenchSection, type Case, type Row } from './harness.js';

interface Sizes {
  readonly watchers: number;
  readonly puts: number;
  readonly revisions: number;
  readonly registrations: number;
  readonly rounds: number;
}
const FULL: Sizes = { watchers: 10_000, puts: 20, revisions: 100_000, registrations: 50_000, rounds: 5 };
const QUICK: Sizes = { watchers: 2_000, puts: 5, revisions: 20_000, registrations: 10_000, rounds: 3 };

const KEY = utf8('/bench/watched');
const VALUE = utf8('v');

function fanOutRow(sz: Sizes): Row {
  interface World {
    kv: MvccStore;
    streams: WatchStream[];
  }
  const subject: Case<World> = {
    setup: () => {
      const kv = new MvccStore();
      // One stream per 100 watchers keeps every stream's buffer far from full: no victims in this row.
      const ws = new WatchableStore(kv, { chanBufLen: 1_000_000 });
      const streams: WatchStream[] = [];
      for (let i = 0; i < sz.watchers; i++) {
        if (i % 100 === 0) streams.push(ws.newWatchStream());
        streams[streams.length - 1]!.watch({ key: KEY });
      }
      for (const st of streams) st.take();
      return { kv, streams };
    },
    run: ({ kv, streams }) => {
      for (let i = 0; i < sz.puts; i++) kv.put({ key: KEY, value: VALUE });
      let delivered = 0;
      for (const st of streams) for (const r of st.take()) delivered += r.events.length;
      return delivered;
    },
  };
  const baseline: Case<{ queues: { id: number; events: unknown[]; revision: number }[][] }> = {
    setup: () => ({ queues: Array.from({ length: sz.watchers / 100 }, () => []) }),
    run: ({ queues }) => {
      const events = [{ kv: KEY }];
      let delivered = 0;
      for (let p = 0; p < sz.puts; p++) {
        for (let w = 0; w < sz.watchers; w++) queues[(w / 100) | 0]!.push({ id: w, events, revision: p });
      }
      for (const q of queues) {
        delivered += q.length;
        q.length = 0;
      }
      return delivered;
    },
  };
  return row(
    {
      name: `fan-out: 1 put → ${sz.watchers} synced watchers`,
      unit: 'event',
      baselineName: 'bare push of one response per watcher',
      reference: { label: 'etcd 3.4.23 ~5.2 µs/watcher', nsPerOp: 5_200 },
    },
    measurePair(subject, baseline, { rounds: sz.rounds, warmup: 1 }),
  );
}

function catchUpRow(sz: Sizes): Row {
  const kv = new MvccStore();
  for (let i = 0; i < sz.revisions; i++) kv.put({ key: utf8(`/bench/k${i % 1000}`), value: VALUE });
  const subject: Case<{ ws: WatchableStore; st: WatchStream }> = {
    setup: () => {
      const ws = new WatchableStore(kv, { chanBufLen: 1_000_000 });
      const st = ws.newWatchStream();
      st.watch({ key: utf8('/bench/'), rangeEnd: utf8('/bench0'), startRevision: 2 });
      return { ws, st };
    },
    run: ({ ws, st }) => {
      while (ws.syncWatchers() > 0) {
        // batches of 1000 revisions until caught up
      }
      let n = 0;
      for (const r of st.take()) n += r.events.length;
      return n;
    },
  };
  const baseline: Case<null> = {
    setup: () => null,
    run: () => {
      let n = 0;
      for (let r = 2; r <= kv.currentRevision; r++) {
        const evs = kv.eventsAt(r);
        for (let i = 0; i < evs.length; i++) consume(evs[i]!.kv.modRevision);
        n += evs.length;
      }
      return n;
    },
  };
  return row(
    { name: `catch-up: 1 unsynced watcher over ${sz.revisions} revisions`, unit: 'event', baselineName: 'bare walk of the revision log' },
    measurePair(subject, baseline, { rounds: sz.rounds, warmup: 1 }),
  );
}

function registerCancelRows(sz: Sizes): Row[] {
  const keys = Array.from({ length: sz.registrations }, (_, i) => utf8(`/bench/w${i}`));
  const mkSubject = (cancel: boolean): Case<{ st: WatchStream; ids: number[] }> => ({
    setup: () => {
      const ws = new WatchableStore(new MvccStore());
      const st = ws.newWatchStream();
      const ids: number[] = [];
      if (cancel) for (const key of keys) ids.push(st.watch({ key }).watchId);
      st.take();
      return { st, ids };
    },
    run: ({ st, ids }) => {
      if (cancel) for (const id of ids) st.cancel(id);
      else for (const key of keys) st.watch({ key });
      st.take();
      return keys.length;
    },
  });
  const mkBaseline = (cancel: boolean): Case<Map<number, { key: Uint8Array }>> => ({
    setup: () => {
      const m = new Map<number, { key: Uint8Array }>();
      if (cancel) keys.forEach((key, i) => m.set(i, { key }));
      return m;
    },
    run: (m) => {
      if (cancel) for (let i = 0; i < keys.length; i++) m.delete(i);
      else keys.forEach((key, i) => m.set(i, { key }));
      return keys.length;
    },
  });
  return [
    row(
      { name: 'watch create (synced, single key)', unit: 'watch', baselineName: 'bare Map.set of a record', reference: { label: 'etcd 3.4.23 ~3.1 µs', nsPerOp: 3_100 } },
      measurePair(mkSubject(false), mkBaseline(false), { rounds: sz.rounds, warmup: 1 }),
    ),
    row(
      { name: 'watch cancel', unit: 'watch', baselineName: 'bare Map.delete', reference: { label: 'etcd 3.4.23 ~1.2 µs', nsPerOp: 1_200 } },
      measurePair(mkSubject(true), mkBaseline(true), { rounds: sz.rounds, warmup: 1 }),
    ),
  ];
}

export const watchSection: BenchSection = {
  name: 'watch',
  title: 'Watchable store',
  run(ctx: BenchContext): Row[] {
    const sz = ctx.quick ? QUICK : FULL;
    ctx.log('watch: fan-out');
    const rows = [fanOutRow(sz)];
    ctx.log('watch: catch-up');
    rows.push(catchUpRow(sz));
    ctx.log('watch: create / cancel');
    rows.push(...registerCancelRows(sz));
    return rows;
  },
};
