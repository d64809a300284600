/**
 * A unary call's comparison (src/shadow/unary.ts), without an etcd: the simulator's answer to a Range is
 * compared with an "etcd answer" made here. An answer equal to the simulator's — as etcd's decoder gives it,
 * its keys in the decoder's order — agrees on the quick path; one whose value or count differs is reported
 * as a divergence naming both answers (the quick path never hides one). And the report that counts them
 * stays bounded whatever method paths a client names.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { createEtcdSim } from '../../src/client/index.js';
import { grpcCodec } from '../../src/shadow/codecs.js';
import type { ShadowContext } from '../../src/shadow/context.js';
import { OTHER_RPCS, ShadowReport } from '../../src/shadow/report.js';
import { ScenarioLog } from '../../src/shadow/scenario.js';
import { UNARY, unaryStep } from '../../src/shadow/unary.js';

const RANGE = '/etcdserverpb.KV/Range';

test('a unary answer equal to the simulator agrees; a different value or count diverges, with both answers', () => {
  const sim = createEtcdSim({ time: 'virtual' });
  try {
    sim.services.kv.put({ key: Buffer.from('k'), value: Buffer.from('v') } as never);
    const codec = grpcCodec(RANGE)!;
    const diverged: Array<{ etcd: string; etcdsim: string }> = [];
    const ctx = {
      sim,
      report: new ShadowReport(undefined),
      log: new ScenarioLog(1, '3.4'),
      leaseGone: () => {},
      diverge: (_rpc: string, _where: string, _req: unknown, etcd: string, etcdsim: string) => void diverged.push({ etcd, etcdsim }),
    } as unknown as ShadowContext;
    // etcd's answer as its decoder gives it: the simulator's own answer through the wire form (keys reordered, defaults present).
    const etcdAnswer = codec.wire(sim.services.kv.range({ key: Buffer.from('k') } as never)) as { kvs: Array<Record<string, unknown>>; count: string };
    const ask = (ok: unknown): void => unaryStep(ctx, UNARY.get(RANGE)!, 'KV.Range', { key: Buffer.from('k') }, { ok }, undefined, codec.wire).run(false);
    ask(etcdAnswer);
    assert.equal(diverged.length, 0);
    ask({ ...etcdAnswer, kvs: [{ ...etcdAnswer.kvs[0], value: Buffer.from('w') }] });
    ask({ ...etcdAnswer, count: '2' });
    assert.equal(diverged.length, 2);
    assert.match(diverged[0]!.etcd, /"value":"w"/);
    assert.match(diverged[0]!.etcdsim, /"value":"v"/);
    assert.match(diverged[1]!.etcd, /"count":"2"/);
    assert.equal(ctx.report.rpcs.get('KV.Range')?.compared, 3);
  } finally {
    sim.close();
  }
});

test("the report's rows are bounded: a client naming ever new paths fills one shared row past the bound", () => {
  const report = new ShadowReport(undefined, 100, 10);
  for (let i = 0; i < 50; i++) {
    report.call(`Nope.M${i}`);
    report.notCompared(`Nope.M${i}`, 'unknown method');
  }
  assert.equal(report.rpcs.size, 11);
  assert.equal(report.rpcs.get(OTHER_RPCS)?.calls, 40);
  assert.equal(report.rpcs.get(OTHER_RPCS)?.notCompared.get('unknown method'), 40);
  assert.match(report.line(), /50 requests/);
});
