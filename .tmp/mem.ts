// What the shadow retains over a long run of puts, with and without compaction through the shadow.
import { Buffer } from 'node:buffer';
import { startEtcd } from '/work/wt/i34/src/diff/index.js';
import { connectEtcd } from '/work/wt/i34/src/grpc/client.js';
import { startShadow } from '/work/wt/i34/src/shadow/index.js';
const N = Number(process.argv[2] ?? 20000), KEYS = 1000, COMPACT = process.argv[3] === 'compact';
const etcd = await startEtcd({ heartbeatMs: 100, electionMs: 1000 });
const shadow = await startShadow({ etcd: etcd.address, host: '127.0.0.1', port: 0 });
const c = connectEtcd(shadow.endpoint);
const v = Buffer.alloc(256, 1);
const mib = (n: number) => (n / 2 ** 20).toFixed(1);
for (let i = 1; i <= N; i++) {
  const r = await c.kv.put({ key: Buffer.from(`k${i % KEYS}`), value: v });
  if (COMPACT && i % 2000 === 0) await c.kv.compact({ revision: r.header.revision });
  if (i % 4000 === 0) {
    await shadow.drained();
    global.gc!(); global.gc!();
    const m = shadow.sim.mvcc as unknown as { storage?: { retainedRevisions: number } };
    const mu = process.memoryUsage(); console.log(i, 'ext', mib(mu.external), 'ab', mib(mu.arrayBuffers), 'heap', mib(process.memoryUsage().heapUsed), 'MiB, rss', mib(process.memoryUsage().rss), 'sim rev', shadow.sim.mvcc.currentRevision, 'compact', shadow.sim.mvcc.compactRevision, JSON.stringify(Object.keys(shadow.sim.mvcc).slice(0, 0)));
  }
}
c.close(); await shadow.close(); await etcd.stop();
