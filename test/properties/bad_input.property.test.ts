// Bad input never corrupts: random well- and wrongly-typed calls through the engine, the services and the
// raw client. A simulator that also gets the junk stays equal to one that gets only the well-typed calls,
// every junk call fails with INVALID_ARGUMENT, a watcher sees each change once, and a third simulator in
// the same process never moves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createEtcdSim, GrpcCode, utf8, type EtcdSim } from '../../src/index.js';
import { checkAsyncProperty } from './harness.js';

const KEYS = ['a', 'b', 'c', 'd'];
const JUNK: readonly unknown[] = ['text', 42, -1.5, null, {}, [1, 2], true, 7n, { length: 4 }, { byteLength: 9000 }];

type Door = 'engine' | 'services' | 'client';
interface Call {
  readonly door: Door;
  readonly op: 'put' | 'delete' | 'txn' | 'range';
  readonly key: number;
  readonly value: number;
  /** Which field gets a junk value (undefined: a well-typed call). */
  readonly junkField: string | undefined;
  readonly junk: number;
}

const FIELDS: Readonly<Record<Call['op'], readonly string[]>> = {
  put: ['key', 'value', 'lease', 'prevKv', 'request'],
  delete: ['key', 'rangeEnd', 'prevKv', 'request'],
  txn: ['success', 'op', 'compare', 'nestedValue', 'request'],
  range: ['key', 'rangeEnd', 'limit', 'request'],
};

const callArb: fc.Arbitrary<Call> = fc
  .record({
    door: fc.constantFrom<Door>('engine', 'services', 'client'),
    op: fc.constantFrom<Call['op']>('put', 'delete', 'txn', 'range'),
    key: fc.nat({ max: KEYS.length - 1 }),
    value: fc.nat({ max: 5 }),
    junk: fc.nat({ max: JUNK.length - 1 }),
    junkAt: fc.option(fc.nat({ max: 4 }), { freq: 2 }),
  })
  .map(({ junkAt, ...c }) => ({ ...c, junkField: junkAt === null ? undefined : FIELDS[c.op][junkAt % FIELDS[c.op].length] }));

const engineFields: Readonly<Record<string, string>> = { prevKv: 'prevKv', rangeEnd: 'rangeEnd', key: 'key', value: 'value', lease: 'lease', limit: 'limit' };
const wireFields: Readonly<Record<string, string>> = { prevKv: 'prev_kv', rangeEnd: 'range_end', key: 'key', value: 'value', lease: 'lease', limit: 'limit' };

/** The request of `c` for `door`, with the junk in place when asked (`withJunk`). */
function request(c: Call, door: Door, withJunk: boolean): Record<string, unknown> | null {
  const junk = JUNK[c.junk];
  const bytes = (s: string): unknown => (door === 'engine' ? utf8(s) : door === 'services' ? Buffer.from(s) : s);
  const names = door === 'engine' ? engineFields : wireFields;
  const k = KEYS[c.key]!;
  let req: Record<string, unknown>;
  if (c.op === 'put') req = { key: bytes(k), value: bytes(`v${c.value}`) };
  else if (c.op === 'delete') req = { key: bytes(k) };
  else if (c.op === 'range') req = { key: bytes(k), [names['rangeEnd']!]: bytes('z') };
  else {
    const put = door === 'engine' ? { requestPut: { key: bytes(k), value: bytes(`t${c.value}`) } } : { request_put: { key: bytes(k), value: bytes(`t${c.value}`) } };
    const nested = door === 'engine' ? { requestTxn: { success: [put] } } : { request_txn: { success: [put] } };
    req = { success: [put, nested] };
  }
  if (!withJunk || c.junkField === undefined) return req;
  switch (c.junkField) {
    case 'request':
      return null;
    case 'success':
      return { ...req, success: junk };
    case 'op':
      return { ...req, success: [junk] };
    case 'compare':
      return { ...req, compare: [junk] };
    case 'nestedValue': {
      const put = door === 'engine' ? { requestPut: { key: bytes('n'), value: junk } } : { request_put: { key: bytes('n'), value: junk } };
      return { ...req, success: [...(req['success'] as unknown[]), door === 'engine' ? { requestTxn: { success: [put] } } : { request_txn: { success: [put] } }] };
    }
    default:
      return { ...req, [names[c.junkField]!]: junk };
  }
}

/**
 * Whether a junk value is one the API documents as converted rather than refused: a missing message is an
 * empty one on the wire forms; there, null is an absent field (protobufjs), a string in a bytes field is
 * base64 (services) or UTF-8 (raw client), and an int64 may be a number, bigint or decimal string. In the
 * engine, a limit is any safe integer and a lease any int64 bigint.
 */
function accepted(c: Call, door: Door): boolean {
  const junk = JUNK[c.junk];
  const f = c.junkField;
  if (f === 'prevKv' && typeof junk === 'boolean') return true;
  if (door === 'engine') {
    if (f === 'limit') return Number.isSafeInteger(junk);
    if (f === 'lease') return typeof junk === 'bigint';
    return false;
  }
  if (f === 'request' || junk === null) return true;
  if ((f === 'key' || f === 'value' || f === 'rangeEnd') && typeof junk === 'string') return true;
  if (f === 'limit' || f === 'lease') return typeof junk === 'bigint' || Number.isInteger(junk);
  return false;
}

async function call(sim: EtcdSim, c: Call, door: Door, withJunk: boolean): Promise<void> {
  const req = request(c, door, withJunk) as never;
  if (door === 'engine') {
    if (c.op === 'put') sim.mvcc.put(req);
    else if (c.op === 'delete') sim.mvcc.deleteRange(req);
    else if (c.op === 'range') sim.mvcc.range(req);
    else sim.mvcc.txn(req);
  } else if (door === 'services') {
    const kv = sim.services.kv;
    if (c.op === 'put') kv.put(req);
    else if (c.op === 'delete') kv.deleteRange(req);
    else if (c.op === 'range') kv.range(req);
    else kv.txn(req);
  } else {
    const kv = sim.client().kv;
    if (c.op === 'put') await kv.put(req);
    else if (c.op === 'delete') await kv.deleteRange(req);
    else if (c.op === 'range') await kv.range(req);
    else await kv.txn(req);
  }
}

const isInvalidArgument = (err: unknown): boolean => (err as { code?: unknown }).code === GrpcCode.INVALID_ARGUMENT;

test('junk-typed calls through every in-process door: refused with INVALID_ARGUMENT, nothing changes, nothing leaks', async () => {
  const bystander = createEtcdSim({ time: 'virtual' });
  for (const k of KEYS) bystander.mvcc.put({ key: utf8(k), value: utf8(`bystander ${k}`) });
  const bystanderHash = bystander.digest();
  await checkAsyncProperty(
    fc.asyncProperty(fc.array(callArb, { minLength: 1, maxLength: 40 }), async (calls) => {
      const subject = createEtcdSim({ time: 'virtual' });
      const reference = createEtcdSim({ time: 'virtual' });
      const watch = subject.watchStream();
      watch.watch({ key: utf8('\0'), rangeEnd: utf8('\0') });
      try {
        for (const c of calls) {
          const junky = c.junkField !== undefined && !accepted(c, c.door);
          let refused = false;
          try {
            await call(subject, c, c.door, true);
          } catch (err) {
            // Only etcd's (or etcd-shaped) errors: well-typed calls may fail as etcd fails them (a duplicate
            // key in a txn); a junk call fails with INVALID_ARGUMENT.
            assert.ok(typeof (err as { code?: unknown }).code === 'number', `not an etcd error: ${String(err)}`);
            if (junky) assert.ok(isInvalidArgument(err), `junk ${c.junkField} via ${c.door}: ${String(err)}`);
            refused = true;
          }
          if (junky) assert.ok(refused, `junk ${c.junkField}=${String(JUNK[c.junk])} via ${c.door} was accepted`);
          if (!refused) await call(reference, c, c.door, true).catch(() => undefined);
          assert.equal(subject.digest(), reference.digest(), `after ${JSON.stringify(c)}`);
          assert.equal(subject.mvcc.checkValid(), undefined);
        }
        const events = watch.take().flatMap((r) => r.events.map((e) => `${e.kv.modRevision}:${Buffer.from(e.kv.key).toString('latin1')}`));
        assert.equal(new Set(events).size, events.length, 'each change once');
        const revs = events.map((e) => Number(e.split(':')[0]));
        assert.deepEqual(revs, [...revs].sort((x, y) => x - y), 'in revision order');
        assert.deepEqual([...new Set(revs)], Array.from({ length: subject.mvcc.currentRevision - 1 }, (_, i) => i + 2), 'every revision');
        assert.equal(bystander.digest(), bystanderHash);
      } finally {
        subject.close();
        reference.close();
      }
    }),
    { file: 'test/properties/bad_input.property.test.ts', numRuns: 150 },
  );
  bystander.close();
});
