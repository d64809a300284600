/**
 * Records a KV history for the linearizability checker (linearizability.ts): each client's put,
 * linearizable get, delete and compare-and-swap txn on one key, sent through any KV client in etcd's
 * message form (a real member's gRPC client, a served simulator's, the simulator's services), with the
 * host time of its call and of its answer.
 *
 * What an error means is etcd's: a write whose request failed may still have been committed (a deadline
 * that expired while the proposal was in the log, "etcdserver: request timed out", "leader changed", a
 * connection to a paused or killed member that dropped after sending), so every failed write is recorded
 * with an unknown outcome — which the checker lets take effect at any time after its call, or never. A
 * failed read is recorded as unanswered, and says nothing.
 */
import { Buffer } from 'node:buffer';
import type { GrpcKVClient } from '../grpc/index.js';
import { hostNow, SimRandom } from '../sim/index.js';
import type { KvOperation } from './linearizability.js';

/** One request of a history workload, on one key (latin1 strings). */
export type KvCall =
  | { readonly type: 'put'; readonly key: string; readonly value: string }
  | { readonly type: 'get'; readonly key: string }
  | { readonly type: 'delete'; readonly key: string }
  | { readonly type: 'cas'; readonly key: string; readonly expect: string | null; readonly value: string };

/** The KV requests a history workload sends. */
export type HistoryKv = Pick<GrpcKVClient, 'range' | 'put' | 'deleteRange' | 'txn'>;

const bytes = (s: string): Buffer => Buffer.from(s, 'latin1');

/** A history being recorded by concurrent clients. */
export class KvHistory {
  readonly operations: KvOperation[] = [];
  /** `now`: host time in ms (default: the host clock, through src/sim, the one owner of time). */
  constructor(private readonly now: () => number = hostNow) {}

  /** Sends `call` as client `client` through `kv`, records it, and returns the recorded operation. */
  async run(client: number, kv: HistoryKv, call: KvCall): Promise<KvOperation> {
    const invoke = this.now();
    let op: KvOperation;
    try {
      op = await this.send(client, kv, call, invoke);
    } catch {
      const ret = 'unknown' as const;
      const base = { client, key: call.key, invoke, ret };
      switch (call.type) {
        case 'put':
          op = { ...base, type: 'put', value: call.value };
          break;
        case 'get':
          op = { ...base, type: 'get', value: null };
          break;
        case 'delete':
          op = { ...base, type: 'delete' };
          break;
        case 'cas':
          op = { ...base, type: 'cas', expect: call.expect, value: call.value };
          break;
      }
    }
    this.operations.push(op);
    return op;
  }

  private async send(client: number, kv: HistoryKv, call: KvCall, invoke: number): Promise<KvOperation> {
    const key = bytes(call.key);
    switch (call.type) {
      case 'put': {
        await kv.put({ key, value: bytes(call.value) });
        return { type: 'put', client, key: call.key, invoke, ret: this.now(), value: call.value };
      }
      case 'get': {
        // serializable=false (the default): a linearizable read, through the leader's ReadIndex.
        const r = await kv.range({ key });
        const kv0 = r.kvs[0];
        return { type: 'get', client, key: call.key, invoke, ret: this.now(), value: kv0 === undefined ? null : Buffer.from(kv0.value).toString('latin1') };
      }
      case 'delete': {
        const r = await kv.deleteRange({ key });
        return { type: 'delete', client, key: call.key, invoke, ret: this.now(), deleted: Number(r.deleted) };
      }
      case 'cas': {
        // Absent: create_revision == 0 (a VALUE compare on an absent key is always false in etcd).
        const compare =
          call.expect === null
            ? { key, target: 'CREATE' as const, result: 'EQUAL' as const, target_union: 'create_revision' as const, create_revision: '0' }
            : { key, target: 'VALUE' as const, result: 'EQUAL' as const, target_union: 'value' as const, value: bytes(call.expect) };
        const r = await kv.txn({ compare: [compare], success: [{ request_put: { key, value: bytes(call.value) } }], failure: [] });
        return { type: 'cas', client, key: call.key, invoke, ret: this.now(), expect: call.expect, value: call.value, succeeded: r.succeeded };
      }
    }
  }
}

/** The key-value workload of concurrent history clients. */
export interface KvClientsOptions {
  readonly history: KvHistory;
  /** How many clients run at once. */
  readonly clients: number;
  /** The KV client that client `i` sends through (e.g. pinned to member i mod 3). */
  readonly kvFor: (client: number) => HistoryKv;
  /** The workload's seed: each client's choices are a pure function of it, the client and what it saw. */
  readonly seed: number;
  /** The keys (default "a" and "b": few keys, so clients contend). */
  readonly keys?: readonly string[] | undefined;
  /** Checked before each call: the clients stop once it returns true. */
  readonly stop: () => boolean;
  /** Called after each recorded operation (e.g. to drive faults by progress). */
  readonly onOperation?: ((op: KvOperation) => void) | undefined;
  /**
   * After this many of its writes had an unknown outcome, a client only reads (default: no limit). Each
   * such write stays concurrent with everything after it, so the checker's search multiplies with their
   * number: a run whose faults time out more requests than usual (a slow election) could otherwise exhaust
   * any step budget. A read without an answer is left out of the history, so it costs the search nothing.
   */
  readonly unknownWritesPerClient?: number | undefined;
}

/**
 * Runs `clients` concurrent clients, each sending one request at a time until `stop()`: linearizable
 * gets (35%), puts (30%), compare-and-swap txns (25%: expecting the value the client last saw, so about
 * half succeed under contention) and deletes (10%). Every written value is unique (`c<client>-<n>`), which
 * is what gives the checker its power: a read names the one write it saw.
 */
export async function runKvClients(o: KvClientsOptions): Promise<void> {
  const keys = o.keys ?? ['a', 'b'];
  if (keys.length === 0) throw new RangeError('runKvClients needs at least one key');
  const root = new SimRandom(o.seed);
  await Promise.all(
    Array.from({ length: o.clients }, async (_, client) => {
      const rnd = root.fork(`client-${client}`);
      const kv = o.kvFor(client);
      const seen = new Map<string, string | null>();
      let unknownWrites = 0;
      for (let n = 0; !o.stop(); n++) {
        const key = rnd.pick(keys);
        const value = `c${client}-${n}`;
        // Drawn whether or not the client still writes, so its later choices do not shift.
        const roll = rnd.nextInt(0, 99);
        const reader = unknownWrites >= (o.unknownWritesPerClient ?? Number.POSITIVE_INFINITY);
        const call: KvCall =
          roll < 35 || reader ? { type: 'get', key } : roll < 65 ? { type: 'put', key, value } : roll < 90 ? { type: 'cas', key, expect: seen.get(key) ?? null, value } : { type: 'delete', key };
        const op = await o.history.run(client, kv, call);
        if (op.ret === 'unknown') {
          if (op.type !== 'get') unknownWrites++;
        } else {
          if (op.type === 'get') seen.set(key, op.value);
          else if (op.type === 'put' || (op.type === 'cas' && op.succeeded === true)) seen.set(key, op.value);
          else if (op.type === 'delete') seen.set(key, null);
        }
        o.onOperation?.(op);
      }
    }),
  );
}
