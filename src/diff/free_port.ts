/**
 * Loopback ports for the etcd members tests and differential runs start (real etcd or `etcdsim etcd`),
 * handed out so that nothing else on the machine takes one between our choosing it and the member binding
 * it. etcd's own e2e harness picks fixed ports for the same reason; we cannot, since many test files run
 * side by side.
 *
 * Why not "bind port 0, read it, close": the kernel then hands out a port from its ephemeral range, and
 * the same range serves every outgoing connection on the machine — under load another test's client
 * connection took such a port before the member bound it ("bind: address already in use", CI stop 38).
 * So ports come from below the ephemeral range (which outgoing connections never use), above etcd's e2e
 * ports (20000 and up) excluded, each test process starting at its own offset, and each port claimed
 * across processes by a file created exclusively in the temp dir (holding the claimer's pid, so a claim
 * of a dead process is taken over), then checked free by binding it.
 */
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const LOW = 10_000;
/** etcd's e2e harness uses ports from 20000 up; our range stops below them and the ephemeral range. */
const HIGH = 20_000;
const SPAN = HIGH - LOW;

// Each test process walks the range from its own offset so that side-by-side processes rarely even
// contend for the same claim file.
let next = Number((BigInt(process.pid) * 2654435761n) % BigInt(SPAN));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Claims `port` for this process by creating its claim file exclusively; a dead claimer's file is taken over. */
function claim(dir: string, port: number): boolean {
  const file = join(dir, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return false;
      let owner = NaN;
      try {
        owner = Number(readFileSync(file, 'utf8'));
      } catch {
        // removed meanwhile: try again
      }
      if (Number.isInteger(owner) && owner > 0 && (owner === process.pid || alive(owner))) return false;
      try {
        unlinkSync(file);
      } catch {
        // another process took it over first: its exclusive create decides
      }
    }
  }
  return false;
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A loopback port no other process of ours holds and nothing listens on, kept for this process's life. */
export async function freePort(): Promise<number> {
  const dir = join(tmpdir(), 'etcdsim-ports');
  mkdirSync(dir, { recursive: true });
  for (let tried = 0; tried < SPAN; tried++) {
    const port = LOW + next;
    next = (next + 1) % SPAN;
    if (claim(dir, port) && (await bindable(port))) return port;
  }
  throw new Error(`no free loopback port in ${LOW}–${HIGH - 1}`);
}
