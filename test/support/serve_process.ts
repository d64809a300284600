/**
 * `etcdsim serve` as a user starts it: a child process of bin/etcdsim.js on an ephemeral loopback port,
 * ready once it prints its one address line (what the CLI tests and the snapshot CLI test drive etcdctl at).
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';

export interface ServeProcess {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  /** host:port from the ready line. */
  readonly address: string;
  /** Everything the process wrote to stdout so far. */
  stdout(): string;
}

/** Starts `etcdsim serve --listen-client-urls http://127.0.0.1:0 <flags>` and waits for its ready line. */
export async function startServeProcess(flags: readonly string[], timeoutMs = 30_000): Promise<ServeProcess> {
  const child = spawn(process.execPath, ['bin/etcdsim.js', 'serve', '--listen-client-urls', 'http://127.0.0.1:0', ...flags], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const address = await new Promise<string>((resolve, reject) => {
    // A child that never says it is ready is killed: left running, it would keep the test file's process
    // alive after the failure, and the run would hang instead of reporting it.
    const guard = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no ready line within ${timeoutMs} ms; stderr: ${err}`));
    }, timeoutMs);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /etcdsim serving etcd v3 API on http:\/\/(127\.0\.0\.1:\d+)\n/.exec(out);
      if (m?.[1] !== undefined) {
        clearTimeout(guard);
        resolve(m[1]);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(guard);
      reject(new Error(`exited ${code}: ${err}`));
    });
  });
  child.removeAllListeners('exit');
  return { child, address, stdout: () => out };
}
