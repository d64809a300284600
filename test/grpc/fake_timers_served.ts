/**
 * What fake timers in a test must not do to a served simulator (`serve()` in the test's own process), as they
 * cannot to a real etcd in another process: move its clock (a lease's TTL), fire a call's grpc-timeout early,
 * or hold back its answers. Shared by fake_timers_served.test.ts (fakes installed after import, jumped) and
 * fake_timers_served_first.test.ts (installed before import, never advanced — jest's and vitest's style).
 *
 * The client is raw HTTP/2 (node:http2, whose internals no fake timer reaches), so what is tested is the
 * server: a Lock call waiting with `grpc-timeout: 60S` while the fake clock jumps JUMP_MS (120 s) must keep
 * waiting and then get the lock when its holder's lease is revoked — the door's deadline runs on host time
 * (afterHostTime, hostNow) — and a lease granted for 300 s still has about 300 s left. The real-time margins
 * (a minute before the deadline, a minute of TTL) leave a loaded machine room; a fake jump goes well past both.
 */
import assert from 'node:assert/strict';
import { etcdService } from '../../src/grpc/index.js';
import type { EtcdServiceName } from '../../src/proto/index.js';
import type { ServeHandle } from '../../src/grpc/server.js';
import { WireClient, frame } from './raw_h2.js';

interface MethodDef {
  readonly path: string;
  requestSerialize(req: object): Buffer;
  responseDeserialize(bytes: Buffer): Record<string, unknown>;
}

function method(service: EtcdServiceName, name: string): MethodDef {
  return (etcdService(service).service as unknown as Record<string, MethodDef>)[name]!;
}

/** How far the tests jump a fake clock: past the waiting call's deadline, not past the lease's TTL. */
export const JUMP_MS = 120_000;
const DEADLINE = '60S';
const TTL = 300;

/** A give-up far beyond any fake jump: the raw client's own timer is a (possibly faked) setTimeout. */
const CLIENT_PATIENCE_MS = 600_000;

/** One unary call on the wire; resolves with the decoded response, or rejects with the gRPC status. */
async function unary(wire: WireClient, service: EtcdServiceName, name: string, req: object, headers?: Record<string, string>): Promise<Record<string, unknown>> {
  const m = method(service, name);
  let response: Buffer | undefined;
  const answer = await wire.call({
    path: m.path,
    body: [frame(m.requestSerialize(req))],
    headers,
    timeoutMs: CLIENT_PATIENCE_MS,
    onMessage: (msg) => {
      response = Buffer.from(msg);
    },
  });
  if (answer.code !== 0 || response === undefined) throw new Error(`${name}: grpc-status ${String(answer.code)} ${answer.message ?? ''}`);
  return m.responseDeserialize(response);
}

/**
 * The scenario on a served simulator: `jump` is called while the Lock call waits (it moves the fake clock,
 * or does nothing when the fakes are never advanced).
 */
export async function servedUnderFakeTimers(door: ServeHandle, jump: () => void): Promise<void> {
  const wire = new WireClient(door.address);
  try {
    const holder = String((await unary(wire, 'Lease', 'LeaseGrant', { TTL }))['ID']);
    const waiter = String((await unary(wire, 'Lease', 'LeaseGrant', { TTL }))['ID']);
    await unary(wire, 'Lock', 'Lock', { name: Buffer.from('fake-timers'), lease: holder });
    let settled: string | undefined;
    const waiting = unary(wire, 'Lock', 'Lock', { name: Buffer.from('fake-timers'), lease: waiter }, { 'grpc-timeout': DEADLINE }).then(
      (r) => (settled = `locked ${String((r['key'] as Buffer).toString()).startsWith('fake-timers/')}`),
      (err: Error) => (settled = err.message),
    );
    // The waiting Lock has reached the server once a later call on the same connection is answered.
    await unary(wire, 'KV', 'Range', { key: Buffer.from('fake-timers/') });
    jump();
    const ttl = Number((await unary(wire, 'Lease', 'LeaseTimeToLive', { ID: holder }))['TTL']);
    assert.ok(ttl >= TTL - 60, `the holder's lease has ${ttl} s left: a fake jump moved the served simulator's clock`);
    assert.equal(settled, undefined, `the waiting Lock ended before its holder's lease went (${settled ?? ''}): its deadline ran on the fake clock`);
    await unary(wire, 'Lease', 'LeaseRevoke', { ID: holder });
    await waiting;
    assert.equal(settled, 'locked true');
  } finally {
    wire.close();
  }
}
