/**
 * Client-level differential (f), over gRPC: the slow consumer. Against a real etcd and against
 * `serve({ port: 0 })` (the simulator on its default, real clock): READERS watch streams that read, and
 * one watch stream that does not — its grpc-js call is paused as soon as its watch is created, on a
 * connection of its own (so its unread HTTP/2 stream holds back only itself: the flow-control window is
 * the server's problem, as with a real slow client). Then PUTS puts of 200 B. Every reader must receive
 * every event exactly once, in order, while the non-reader still reads nothing; then the non-reader
 * resumes and must receive every event exactly once, in order too (in etcd it was a victim and catches up
 * in batches).
 *
 * Compared: the verdicts and counts. Reported, not compared: responses per stream (etcd batches: a reader
 * that falls behind by a channel's worth becomes a victim for a moment and then gets several revisions per
 * response) and the time the readers took to drain after the last put.
 */
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { etcdService } from '../../src/grpc/index.js';
import { grpcDifferential, prefixEnd, skipWithoutEtcd, type GrpcProgramContext } from './harness.js';

const FILE = 'test/clients/slow_consumer_grpc.test.ts';
const READERS = 20;
const PUTS = 3000;
const IN_FLIGHT = 32;
const VALUE = 'x'.repeat(200);
const P = 'slow/';
const WAIT_MS = 15_000;

interface WatchResponse {
  header: { revision: string };
  watch_id: string;
  created: boolean;
  canceled: boolean;
  compact_revision: string;
  cancel_reason: string;
  events: { type: string; kv: { key: Buffer; mod_revision: string; value: Buffer } }[];
}

interface Stream {
  readonly call: grpc.ClientDuplexStream<unknown, WatchResponse>;
  created: boolean;
  responses: number;
  readonly revs: number[];
  readonly problems: string[];
  ended: boolean;
}

function openWatch(t: GrpcProgramContext, client: grpc.Client, start: number, onCreated?: (s: Stream) => void): Stream {
  const call = (client as unknown as { Watch(): grpc.ClientDuplexStream<unknown, WatchResponse> }).Watch();
  const s: Stream = { call, created: false, responses: 0, revs: [], problems: [], ended: false };
  call.on('data', (res: WatchResponse) => {
    if (res.created) {
      s.created = true;
      onCreated?.(s);
    } else s.responses++;
    if (res.canceled) s.problems.push(`canceled: compact_revision ${res.compact_revision}, reason "${res.cancel_reason}"`);
    for (const e of res.events) {
      if (e.type !== 'PUT' || e.kv.value.length !== VALUE.length) s.problems.push(`unexpected event ${e.type} ${e.kv.key.toString()}`);
      s.revs.push(Number(e.kv.mod_revision));
    }
    t.changed();
  });
  call.on('error', (err: Error) => {
    if ((err as grpc.ServiceError).code !== grpc.status.CANCELLED) s.problems.push(`error: ${err.message}`);
    t.changed();
  });
  call.on('end', () => {
    s.ended = true;
    t.changed();
  });
  call.write({ create_request: { key: Buffer.from(P), range_end: prefixEnd(P), start_revision: String(start + 1) } });
  return s;
}

/** Every revision start+1 .. start+PUTS, once, in order. */
const verdict = (s: Stream, start: number): { events: number; inOrderOnce: boolean; problems: string[] } => ({
  events: s.revs.length,
  inOrderOnce: s.revs.length === PUTS && s.revs.every((r, i) => r === start + 1 + i),
  problems: s.problems,
});

async function slowConsumer(t: GrpcProgramContext): Promise<void> {
  const creds = grpc.credentials.createInsecure();
  const KV = etcdService('KV');
  const Watch = etcdService('Watch');
  const kv = new KV(t.address, creds) as unknown as grpc.Client & Record<string, (req: unknown, cb: (err: Error | null, res: { header: { revision: string } }) => void) => void>;
  const unary = (name: string, req: unknown): Promise<{ header: { revision: string } }> =>
    new Promise((resolve, reject) => kv[name]!.call(kv, req, (err, res) => (err ? reject(err) : resolve(res))));
  const readersClient = new Watch(t.address, creds);
  // The non-reader on a connection of its own.
  const slowClient = new Watch(t.address, creds, { 'grpc.use_local_subchannel_pool': 1 });
  const streams: Stream[] = [];
  try {
    const start = Number((await unary('Range', { key: Buffer.from(`${P}none`) })).header.revision);
    for (let i = 0; i < READERS; i++) streams.push(openWatch(t, readersClient, start));
    const slow = openWatch(t, slowClient, start, (s) => s.call.pause());
    streams.push(slow);
    const readers = streams.slice(0, READERS);
    await t.until(() => streams.every((s) => s.created), 'every watch to be created', WAIT_MS);
    t.observe('created', { readers: readers.length, nonReader: slow.created });

    const began = performance.now();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < PUTS) {
        const i = next++;
        await unary('Put', { key: Buffer.from(`${P}k${i % 500}`), value: Buffer.from(VALUE) });
      }
    };
    await Promise.all([...Array(IN_FLIGHT).keys()].map(worker));
    const putsDone = performance.now();
    await t.until(() => readers.every((s) => s.revs.length >= PUTS || s.problems.length > 0 || s.ended), `every reader to receive ${PUTS} events`, WAIT_MS, () =>
      readers.map((s, i) => `reader ${i}: ${s.revs.length} events${s.problems.length > 0 ? ` ${JSON.stringify(s.problems)}` : ''}`).join('; '));
    const drained = performance.now();
    t.observe('readers', readers.map((s) => verdict(s, start)));
    t.note(
      `${PUTS} puts in ${Math.round(putsDone - began)} ms; readers drained ${Math.round(drained - putsDone)} ms after the last put; ` +
        `responses per reader ${Math.min(...readers.map((s) => s.responses))}..${Math.max(...readers.map((s) => s.responses))} for ${PUTS} events`,
    );

    slow.call.resume();
    const before = slow.responses;
    await t.until(() => slow.revs.length >= PUTS || slow.problems.length > 0 || slow.ended, `the resumed non-reader to receive ${PUTS} events`, WAIT_MS, () =>
      `${slow.revs.length} events; ${JSON.stringify(slow.problems)}`);
    t.observe('non-reader after resuming', verdict(slow, start));
    t.note(`the non-reader caught up in ${slow.responses - before} more responses (${slow.responses} in all)`);
  } finally {
    for (const s of streams) s.call.cancel();
    kv.close();
    readersClient.close();
    slowClient.close();
  }
}

test(`gRPC slow consumer: ${READERS} reading watch streams and one that does not read, ${PUTS} puts of 200 B`, { skip: skipWithoutEtcd, timeout: 60_000 }, async () => {
  await grpcDifferential('grpc slow consumer', slowConsumer, { file: FILE });
});
