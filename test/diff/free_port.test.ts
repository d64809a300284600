/**
 * freePort (src/diff/free_port.ts) hands out ports from below the kernel's ephemeral range, claimed across
 * processes: a port another live process of ours claimed is never handed out, a dead process's claim is
 * taken over, every port handed out binds, and an exhausted range says so instead of reusing a claim.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/diff/free_port.js';

test('freePort: ports below the ephemeral range, each claimed once, a dead claimer taken over, exhaustion refused', async () => {
  const saved = process.env['TMPDIR'];
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-free-port-'));
  process.env['TMPDIR'] = dir;
  try {
    const a = await freePort();
    const b = await freePort();
    assert.notEqual(a, b);
    for (const p of [a, b]) {
      assert.ok(p >= 10_000 && p < 20_000, `port ${p} outside 10000–19999`);
      assert.equal(readFileSync(join(dir, 'etcdsim-ports', String(p)), 'utf8'), String(process.pid));
      // Handed out free: it binds.
      await new Promise<void>((res, rej) => {
        const s = createServer().once('error', rej);
        s.listen(p, '127.0.0.1', () => s.close(() => res()));
      });
    }
    // Every other port claimed by a live process (the runner that started us), one by a process that exited.
    const claims = join(dir, 'etcdsim-ports');
    mkdirSync(claims, { recursive: true });
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    const left = a === 15_000 || b === 15_000 ? 15_001 : 15_000;
    for (let p = 10_000; p < 20_000; p++) writeFileSync(join(claims, String(p)), String(p === left ? dead : process.ppid));
    assert.equal(await freePort(), left);
    assert.equal(readFileSync(join(claims, String(left)), 'utf8'), String(process.pid));
    await assert.rejects(freePort(), /no free loopback port in 10000–19999/);
  } finally {
    if (saved === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = saved;
    rmSync(dir, { recursive: true, force: true });
  }
});
