/**
 * The floor section's watch-delivery row (floor.bench.ts): an etcd3 Watcher on a prefix, then `events` puts
 * through the same client, `inFlight` at a time, timed until the Watcher has emitted every put's 'put'
 * event. The simulator applies each put and delivers its event through the Watch stream; the floor is etcd3
 * on its mock() plug point, whose watch stream emits one canned event per canned put answer — etcd3's own
 * work for a put and an event, and nothing else.
 */
import { EventEmitter } from 'node:events';
import { Etcd3, type Watcher } from 'etcd3';
import type { EtcdSim } from '../src/index.js';
import type { AsyncCase } from './etcd3.bench.js';

const PREFIX = 'watched/';
const VALUE = 'value-0123456789';
const header = { cluster_id: '1', member_id: '2', revision: '3', raft_term: '4' };

interface World {
  readonly client: Etcd3;
  readonly sim: EtcdSim | undefined;
  watcher: Watcher | undefined;
  seen: number;
  wanted: number;
  done: (() => void) | undefined;
}

/**
 * The floor's Watch stream: answers a create request with `created` and emits one event for each put the
 * mock answers, a microtask later (the simulator too delivers after the put's own code is done).
 */
class CannedWatchStream extends EventEmitter {
  writable = true;
  private revision = 3;

  write(req: { create_request?: unknown; cancel_request?: unknown }): boolean {
    if (req.create_request !== undefined) queueMicrotask(() => this.emit('data', { header, watch_id: '0', created: true, events: [] }));
    if (req.cancel_request !== undefined) queueMicrotask(() => this.emit('data', { header, watch_id: '0', canceled: true, events: [] }));
    return true;
  }

  put(key: Buffer): void {
    const rev = String(++this.revision);
    const kv = { key, value: Buffer.from(VALUE), create_revision: '2', mod_revision: rev, version: '2', lease: '0' };
    queueMicrotask(() => this.emit('data', { header: { ...header, revision: rev }, watch_id: '0', events: [{ type: 'Put', kv, prev_kv: null }] }));
  }

  end(): void {}

  cancel(): void {}
}

function floorClient(): Etcd3 {
  const client = new Etcd3({ hosts: '127.0.0.1:1' });
  let stream: CannedWatchStream | undefined;
  client.mock({
    exec: (_service: string, method: string, req: { key?: Buffer }) => {
      if (method === 'put' && req.key !== undefined) stream?.put(req.key);
      return Promise.resolve({ header });
    },
    withConnection: (_service: string, fn: (args: unknown) => unknown) =>
      Promise.resolve(
        fn({
          resource: {},
          metadata: {},
          client: {
            watch: () => {
              stream = new CannedWatchStream();
              return stream;
            },
          },
        }),
      ),
  } as unknown as Parameters<Etcd3['mock']>[0]);
  return client;
}

function deliveryCase(make: () => { client: Etcd3; sim: EtcdSim | undefined }, events: number, inFlight: number): AsyncCase<World> {
  return {
    setup: async () => {
      const w: World = { ...make(), watcher: undefined, seen: 0, wanted: events, done: undefined };
      w.watcher = await w.client.watch().prefix(PREFIX).create();
      w.watcher.on('put', () => {
        if (++w.seen >= w.wanted) w.done?.();
      });
      return w;
    },
    run: async (w) => {
      const all = new Promise<void>((resolve) => {
        w.done = resolve;
      });
      let next = 0;
      const worker = async (): Promise<void> => {
        for (let i = next++; i < events; i = next++) await w.client.put(`${PREFIX}k${i % 1000}`).value(VALUE).exec();
      };
      await Promise.all(Array.from({ length: inFlight }, worker));
      await all;
      return w.seen;
    },
    teardown: async (w) => {
      await w.watcher?.cancel();
      w.client.close();
      w.sim?.close();
    },
  };
}

/** A fresh simulator from `makeSim` and the floor, each as a measurePairAsync case. */
export function watchDeliveryCases(makeSim: () => EtcdSim, events: number, inFlight: number): { subject: AsyncCase<World>; baseline: AsyncCase<World> } {
  return {
    subject: deliveryCase(
      () => {
        const sim = makeSim();
        return { sim, client: sim.etcd3() };
      },
      events,
      inFlight,
    ),
    baseline: deliveryCase(() => ({ client: floorClient(), sim: undefined }), events, inFlight),
  };
}
