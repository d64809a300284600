/**
 * A unary call's comparison (src/shadow/unary.ts), without an etcd: the simulator's answer to a Range is
 * compared with an "etcd answer" made here. An answer equal to the simulator's — as etcd's decoder gives it,
 * its keys in the decoder's order — agrees on the quick path; one whose value or count differs is reported
 * as a divergence naming both answers (the quick path never hides one). etcd's answer kept as its bytes
 * (wire_answer.ts) agrees without being decoded when the simulator's, in etcd's encoding, has those bytes but
 * for what etcd leaves free; any other bytes are decoded and compared as before. And the report that counts
 * them stays bounded whatever method paths a client names.
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
import { WireAnswer } from '../../src/shadow/wire_answer.js';
import { encodeRangeResponse } from '../../src/grpc/index.js';
import type * as M from '../../src/server/messages.js';

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

test("etcd's answer as bytes: equal to the simulator's in etcd's encoding agrees without decoding it (raft term and IDs free); any other difference is decoded and compared as before", () => {
  const sim = createEtcdSim({ time: 'virtual' });
  try {
    sim.services.kv.put({ key: Buffer.from('k'), value: Buffer.from('v') } as never);
    sim.services.kv.put({ key: Buffer.from('k2'), value: Buffer.from('v2') } as never);
    const codec = grpcCodec(RANGE)!;
    const diverged: Array<{ etcd: string; etcdsim: string }> = [];
    const ctx = {
      sim,
      report: new ShadowReport(undefined),
      log: new ScenarioLog(1, '3.4'),
      leaseGone: () => {},
      diverge: (_rpc: string, _where: string, _req: unknown, etcd: string, etcdsim: string) => void diverged.push({ etcd, etcdsim }),
    } as unknown as ShadowContext;
    const req = { key: Buffer.from('k'), range_end: Buffer.from('l') };
    const mine = sim.services.kv.range(req as never);
    let decoded = 0;
    const answer = (m: M.RangeResponse): WireAnswer =>
      new WireAnswer(encodeRangeResponse(m), (b) => {
        decoded++;
        return codec.res(b);
      });
    const step = (etcd: WireAnswer, late = false): void => unaryStep(ctx, UNARY.get(RANGE)!, 'KV.Range', req, etcd, undefined, codec.wire).run(late);

    // etcd's raft term is its own, its revision read off the bytes.
    const same = answer({ ...mine, header: { ...mine.header, raft_term: '7' } });
    assert.equal(unaryStep(ctx, UNARY.get(RANGE)!, 'KV.Range', req, same, undefined, codec.wire).rev, 3);
    step(same);
    assert.deepEqual([decoded, diverged.length], [0, 0]);
    // A late read (etcd answered at 2, the simulator is at 3): it reads at 2, and the header's revision is etcd's on both sides.
    const at2 = sim.services.kv.range({ ...req, revision: '2' } as never);
    assert.equal(at2.kvs.length, 1);
    step(answer({ ...at2, header: { ...at2.header, revision: '2' } }), true);
    assert.deepEqual([decoded, diverged.length], [0, 0]);
    // A raft term of 0 against the simulator's: a difference (as canon has it), decoded and reported.
    step(answer({ ...mine, header: { ...mine.header, raft_term: '0' } }));
    assert.deepEqual([decoded, diverged.length], [1, 1]);
    // Another value, another count, another revision: each decoded and reported with both answers.
    step(answer({ ...mine, kvs: [{ ...mine.kvs[0]!, value: Buffer.from('w') }, mine.kvs[1]!] }));
    step(answer({ ...mine, count: '3' }));
    step(answer({ ...mine, header: { ...mine.header, revision: '9' } }));
    assert.deepEqual([decoded, diverged.length], [4, 4]);
    assert.match(diverged[1]!.etcd, /"value":"w"/);
    assert.match(diverged[1]!.etcdsim, /"value":"v"/);
    assert.match(diverged[2]!.etcd, /"count":"3"/);
    // Bytes another encoder wrote (a default written out: more = false): not the simulator's bytes, the same message.
    const withDefault = Buffer.concat([encodeRangeResponse(mine), Buffer.from([0x18, 0x00])]);
    step(new WireAnswer(withDefault, (b) => (decoded++, codec.res(b))));
    assert.deepEqual([decoded, diverged.length], [5, 4]);
    assert.equal(ctx.report.rpcs.get('KV.Range')?.compared, 7);
    // The scenario log writes etcd's answer decoded, as `{ ok }`.
    assert.match(ctx.log.text(), /"etcd": \{\n\s+"ok": \{\n\s+"kvs"/);
  } finally {
    sim.close();
  }
});
