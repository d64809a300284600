/**
 * Every bundled lab is a script a learner can take home: `etcdsim run LAB --script` does the lab's steps with
 * etcdctl 3.4.23 against a fresh real etcd 3.4.23 (etcd's default timing, so leases have its 2 s minimum TTL),
 * and what it prints must be the simulator's transcript, but for what etcd leaves free: lease IDs, clientv3's
 * log line's time and client ID, the member's ID and the address defrag names, the revision the transcript adds to a watch's lines, and where a background
 * watch's lines fall between the commands' lines (each watch's lines are compared in their own order). A lab
 * may name more free lines (`# script-free /REGEX/`, for what depends on the moment: a lease's remaining TTL),
 * or say why its script cannot be checked at all (`# script-unchecked: WHY`). A lab that needs what etcdctl cannot do has no script, and says why. Without etcd and etcdctl the etcd
 * part skips outside CI and fails in CI.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { listBundledScenarios, runCommand } from '../../src/cli/run_command.js';
import { startEtcd } from '../../src/diff/etcd_process.js';
import { labScript, parseScenario, runScenario, scriptBlockers, scriptEtcdFlags, scriptNotes } from '../../src/scenario/index.js';
import { requireCommands } from '../support/prerequisites.js';

const skip = requireCommands(['etcd', 'etcdctl']);
const labs = listBundledScenarios().map((s) => ({ ...s, text: readFileSync(s.path, 'utf8') }));

/** The foreground lines and each watch's lines, normalised to what etcd fixes. */
export function streams(lines: readonly string[], free: readonly RegExp[]): Map<string, string[]> {
  const out = new Map<string, string[]>([['', []]]);
  for (const raw of lines) {
    if (raw.startsWith('#') && !raw.startsWith('##')) continue;
    let l = raw
      .trimEnd()
      .replace(/^\[watch (\S+) @\d+\]/, '[watch $1]')
      .replace(/\b[0-9a-f]{16}\b/g, '<lease>')
      .replace(/"ts":"[^"]*"/, '"ts":…')
      .replace(/"cluster_id":\d+,"member_id":\d+/, '"cluster_id":…,"member_id":…')
      .replace(/endpoint:\/\/client-[^/]*\/[^"]*/, 'endpoint://client-…')
      .replace(/^((?:\s+\d+ )?memberID:)\d+/, '$1…')
      .replace(/^(Finished defragmenting etcd member)\[[^\]]*\]$/, '$1[…]');
    if (free.some((f) => f.test(l))) continue;
    // A session's lines for its whole stream (`[session S] progress notify: 5`) are compared in their own order too.
    const w = /^\[(?:watch|session) (\S+)\]/.exec(l);
    const key = w === null ? '' : w[1]!;
    if (!out.has(key)) out.set(key, []);
    out.get(key)!.push(l);
  }
  return out;
}

/** Runs a script with bash against `endpoint`; resolves with its stdout and stderr. */
function bash(script: string, endpoint: string): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-s'], { env: { ...process.env, ETCDCTL_ENDPOINTS: endpoint, SETTLE: '1' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, out, err }));
    child.stdin.end(script);
  });
}

const scriptable = labs.filter((l) => scriptBlockers(parseScenario(l.text)).length === 0);
const checked = scriptable.filter((l) => scriptNotes(l.text).unchecked === undefined);

test('the labs that have no script say why, and `run --script` refuses them with it', async () => {
  for (const l of labs.filter((x) => !scriptable.includes(x))) {
    const err: string[] = [];
    const code = await runCommand([l.name, '--script'], () => {}, (e) => err.push(e));
    assert.equal(code, 1, l.name);
    assert.match(err.join('\n'), new RegExp(`^etcdsim run: ${l.name} has no etcdctl script: it needs what etcdctl cannot do`), l.name);
  }
  assert.ok(scriptable.length >= 8, `${scriptable.length} labs have a script`);
});

test('a lab whose script is unchecked says why, on the script\'s first lines', () => {
  for (const l of scriptable.filter((x) => !checked.includes(x))) {
    const why = scriptNotes(l.text).unchecked!;
    const head = labScript(l.name, runScenario(l.text).transcript, why).split('\n').slice(0, 8);
    assert.ok(head.includes(`# Not the same on every run: ${why}.`), l.name);
  }
});

test('an option that is an etcd flag is a line of the script that starts etcd with it, not a reason to have none', () => {
  const text = 'option quotaBackendBytes=65536\nput /k v';
  assert.deepEqual(scriptBlockers(parseScenario(text)), []);
  const script = labScript('q', runScenario(text).transcript);
  assert.deepEqual(scriptEtcdFlags(script), ['--quota-backend-bytes=65536']);
  assert.deepEqual(scriptEtcdFlags(labScript('k', runScenario('put /k v').transcript)), []);
  const notify = labScript('n', runScenario('option watchProgressNotifyIntervalMs=1000\nput /k v').transcript);
  assert.deepEqual(scriptEtcdFlags(notify), ['--experimental-watch-progress-notify-interval=1000ms']);
  assert.notDeepEqual(scriptBlockers(parseScenario('option watchChanBufLen=4\nput /k v')), []);
});

for (const lab of checked) {
  test(`${lab.name}: its script, run with etcdctl against etcd 3.4.23, prints its transcript`, { skip }, async () => {
    const sim = runScenario(lab.text, { title: lab.name });
    assert.ok(sim.ok, sim.failure?.message);
    const script = labScript(lab.name, sim.transcript);
    const etcd = await startEtcd({ heartbeatMs: 100, electionMs: 1000, flags: scriptEtcdFlags(script) });
    try {
      const r = await bash(script, etcd.address);
      assert.equal(r.err, '', `the script wrote to stderr:\n${r.err}`);
      const { free } = scriptNotes(lab.text);
      const got = streams(r.out.split('\n').slice(0, -1), free);
      const want = streams(sim.transcript, free);
      for (const [name, lines] of want) assert.deepEqual(got.get(name) ?? [], lines, name === '' ? 'the commands and what etcdctl printed' : `watch or session ${name}`);
      assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort());
    } finally {
      await etcd.stop();
    }
  });
}
