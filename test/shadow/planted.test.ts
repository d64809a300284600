/**
 * A planted difference: the simulator run as etcd 3.6 behind a shadow in front of etcd 3.4.23. A tombstone
 * exactly at the compaction revision is dropped by 3.4.23 and kept from 3.6 on (docs/version-differences.md),
 * so a watch from that revision sees the DELETE on the simulator only. The shadow must report it in the
 * watch's stream and write a scenario.json that `etcdsim diff --replay` replays to the same divergence on a
 * fresh etcd — and to none with the simulator as 3.4.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Buffer } from 'node:buffer';
import { connectEtcd } from '../../src/grpc/client.js';
import type * as M from '../../src/server/messages.js';
import { runCli } from '../../src/cli/program.js';
import { requireCommands } from '../support/prerequisites.js';
import { startRig, summary, type ShadowRig } from './helpers.js';

const skip = requireCommands(['etcd']);
const dir = mkdtempSync(join(tmpdir(), 'etcdsim-shadow-'));
let rig: ShadowRig;
before(async () => {
  if (skip === false) rig = await startRig({ etcdVersion: '3.6', divergenceDir: dir });
});
after(async () => {
  await rig?.close();
  rmSync(dir, { recursive: true, force: true });
});

const k = Buffer.from('/k');

test('simulator as 3.6 behind etcd 3.4.23: the tombstone at the compaction revision diverges in the watch, with a scenario that replays it', { skip }, async () => {
  const c = connectEtcd(rig.shadow.endpoint);
  try {
    await c.kv.put({ key: k, value: Buffer.from('1') }); // 2
    const del = await c.kv.deleteRange({ key: k }); // 3
    const at = del.header.revision;
    await c.kv.compact({ revision: at, physical: true });
    const w = c.watch.watch();
    const got: M.WatchResponse[] = [];
    w.onResponse((rs) => got.push(...rs));
    w.write({ create_request: { key: k, start_revision: at } });
    await c.kv.put({ key: k, value: Buffer.from('2') }); // 4: the first event etcd 3.4.23 sends this watch
    for (let i = 0; i < 6000 && !got.some((r) => r.events.length > 0); i++) await new Promise((r) => setTimeout(r, 5));
    // The application got etcd 3.4.23's answer: no DELETE at the compaction revision, the PUT at 4 first.
    assert.equal(got.flatMap((r) => r.events)[0]?.type, 'PUT');
    await rig.shadow.drained();
    w.cancel();
  } finally {
    c.close();
  }
  assert.equal(rig.shadow.report.divergences, 1, summary(rig));
  assert.match(rig.divergences[0]!, /^Watch\.Watch id 0\b/);
  const [sub] = readdirSync(dir);
  const d = JSON.parse(readFileSync(join(dir, sub!, 'divergence.json'), 'utf8')) as { etcd: { type?: string }; etcdsim: { type?: string } };
  assert.equal(d.etcdsim.type, 'DELETE');
  assert.equal(d.etcd.type, 'PUT');
  const scenario = join(dir, sub!, 'scenario.json');
  assert.ok(existsSync(scenario));

  // Replayed on fresh etcds: the same divergence with the 3.6 profile, none with 3.4's.
  const lines: string[] = [];
  const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
  assert.equal(await runCli(['diff', '--replay', scenario, '--start-etcd', '--etcd-version', '3.6'], io), 1, lines.join('\n'));
  assert.ok(lines.some((l) => /^divergence: Watch\.Watch id 0\b/.test(l)), lines.join('\n'));
  lines.length = 0;
  assert.equal(await runCli(['diff', '--replay', scenario, '--start-etcd', '--etcd-version', '3.4'], io), 0, lines.join('\n'));

  // The same steps as a script `etcdsim run` plays on the simulator alone, etcd's answers its expectations: as
  // 3.6 the run stops at the watch's events (the divergent step, named by its line), as 3.4 every one holds.
  const script = join(dir, sub!, 'scenario.etcdsim');
  const text = readFileSync(script, 'utf8');
  assert.match(text, /^etcd-version 3\.6$/m);
  assert.match(text, /^watch W1_0 \/k --rev=3 --stream=S1$/m);
  lines.length = 0;
  assert.equal(await runCli(['run', script], io), 1, lines.join('\n'));
  const failed = lines.find((l) => /expect watch W1_0 events/.test(l) && /line \d+/.test(l)) ?? lines.join('\n');
  assert.match(failed, /DELETE \/k@3/, lines.join('\n'));
  const as34 = join(dir, 'as-3.4.etcdsim');
  writeFileSync(as34, text.replace(/^etcd-version 3\.6$/m, 'etcd-version 3.4'));
  lines.length = 0;
  assert.equal(await runCli(['run', as34], io), 0, lines.join('\n'));
});
