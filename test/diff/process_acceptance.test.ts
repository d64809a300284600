/**
 * Issue 31's acceptance on a cluster of separate processes: 3 members under a seeded random client
 * workload (concurrent clients, each pinned to a member, putting, reading, deleting and compare-and-swapping
 * three keys, plus writers of a ledger of unique keys) survive a SIGKILL and a restart on the data dir of
 * each member in turn — the leader first — with a linearizable history (src/diff/linearizability.ts), no
 * acknowledged write lost (every ledger key a put was answered for is there, on every member) and every
 * member ending on the same keyspace at the same revision. The real etcd 3.4.23 runs it as the reference,
 * etcdsim as the etcd binary the same way (PROCESS_BINARIES).
 *
 * Faults follow the workload's progress (so many answers since the last one), never fixed delays. The seed
 * is printed; ETCDSIM_SEED replays one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startEtcdCluster, type EtcdCluster } from '../../src/diff/etcd_cluster.js';
import { KvHistory, runKvClients, type HistoryKv } from '../../src/diff/kv_history.js';
import { checkLinearizable, formatHistory } from '../../src/diff/linearizability.js';
import { answerProgress, PROCESS_BINARIES } from './helpers.js';

const SEED = Number(process.env['ETCDSIM_SEED'] ?? 31);
/** Answers between two faults. */
const STRIDE = 25;

/** KV requests of a client pinned to `pin`, sent to the next running member while its own is down. */
function routed(c: EtcdCluster, pin: number): HistoryKv {
  const kv = (): HistoryKv => {
    for (let k = 0; k < c.members.length; k++) {
      const i = (pin + k) % c.members.length;
      if (c.members[i]!.state === 'running') return c.client(i).kv;
    }
    return c.client(pin).kv;
  };
  return { range: (r) => kv().range(r), put: (r) => kv().put(r), deleteRange: (r) => kv().deleteRange(r), txn: (r) => kv().txn(r) };
}

for (const bin of PROCESS_BINARIES) {
  test(`${bin.name}: 3 processes under a random workload survive SIGKILL and restart of each member in turn — linearizable, no acknowledged write lost`, { skip: bin.skip, timeout: 120_000 }, async (t) => {
    const replay = `seed ${SEED} (replay: ETCDSIM_SEED=${SEED} node --import tsx --test test/diff/process_acceptance.test.ts)`;
    t.diagnostic(replay);
    const c = await startEtcdCluster({ bin: bin.bin, size: 3, deadlineMs: 2000 });
    t.after(() => c.stop());

    const history = new KvHistory();
    let stop = false;
    const { onOperation, answers } = answerProgress();
    const clients = runKvClients({
      history,
      clients: 6,
      kvFor: (client) => routed(c, client % 3),
      seed: SEED,
      keys: ['a', 'b', 'c'],
      stop: () => stop,
      onOperation,
      // Two writes of unknown outcome per client, then reads: each such write multiplies the checker's
      // search, and three kills under load can time out many (the ledger below keeps writing throughout).
      unknownWritesPerClient: 2,
    });
    // The ledger: each writer puts keys no one else writes; an answered put must survive everything.
    const acked = new Set<string>();
    const attempted = new Set<string>();
    const ledger = Promise.all(
      [0, 1, 2].map(async (w) => {
        const kv = routed(c, w);
        for (let n = 0; !stop; n++) {
          const key = `ledger/${w}/${n}`;
          attempted.add(key);
          try {
            await kv.put({ key: Buffer.from(key), value: Buffer.from(String(n)) });
            acked.add(key);
          } catch {
            // an unknown outcome: the key may or may not be there
          }
        }
      }),
    );

    const faults: string[] = [];
    try {
      await answers(STRIDE);
      const first = await c.waitForLeader();
      for (const victim of [first, ...[0, 1, 2].filter((i) => i !== first)]) {
        const wasLeader = (await c.leader()) === victim;
        await c.kill(victim);
        faults.push(`SIGKILL ${c.members[victim]!.name}${wasLeader ? ' (the leader)' : ''}`);
        await answers(STRIDE);
        await c.restart(victim);
        faults.push(`restarted ${c.members[victim]!.name}`);
        await answers(STRIDE);
      }
    } finally {
      stop = true;
      await Promise.all([clients, ledger]);
    }
    const unknownWrites = history.operations.filter((o) => o.ret === 'unknown' && o.type !== 'get').length;
    t.diagnostic(`${history.operations.length} operations (${unknownWrites} writes with an unknown outcome), ${acked.size} ledger writes answered; ${faults.join(', ')}`);
    assert.match(faults[0]!, /\(the leader\)/);

    // Every member, through a linearizable read, then its own applied state: the same keyspace at the
    // same revision, holding every answered ledger write and nothing no one wrote.
    const everything = { key: Buffer.from([0]), range_end: Buffer.from([0]) };
    const spaces = [];
    for (let i = 0; i < 3; i++) {
      await c.client(i).kv.range({ key: Buffer.from('a') });
      const r = await c.client(i).kv.range({ ...everything, serializable: true });
      spaces.push({ revision: r.header.revision, kvs: r.kvs.map((kv) => `${kv.key.toString()}=${kv.value.toString()}@${kv.mod_revision}`) });
    }
    for (const s of spaces.slice(1)) assert.deepEqual(s, spaces[0], `members disagree after settling (${replay})`);
    const ledgerKeys = new Set(spaces[0]!.kvs.filter((s) => s.startsWith('ledger/')).map((s) => s.slice(0, s.indexOf('='))));
    const lost = [...acked].filter((k) => !ledgerKeys.has(k));
    assert.deepEqual(lost, [], `acknowledged writes lost (${replay})`);
    assert.deepEqual([...ledgerKeys].filter((k) => !attempted.has(k)), [], 'keys no one wrote');

    const ops = history.operations;
    const r = checkLinearizable(ops, { maxSteps: 20_000_000 });
    assert.equal(r.verdict, 'linearizable', r.verdict === 'not-linearizable' ? `${replay}\n${r.text}\n\nfull history:\n${formatHistory(ops)}` : `${replay} ${JSON.stringify(r)}`);
  });
}
