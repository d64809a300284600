/**
 * `etcdsim install-bin DIR`: puts an executable named `etcd` into DIR that starts `etcdsim etcd` with the
 * arguments it is given, for harnesses that take a bin directory (etcd's e2e framework's `-bin-dir`) or look
 * for `etcd` on PATH. The launcher names this Node and this package's `bin/etcdsim.js` by absolute path, so it
 * works from anywhere; the release it behaves as is ETCDSIM_ETCD_VERSION's, read when it starts.
 */
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError, type CliIo } from '../io.js';

/** A word as sh reads it back unchanged. */
const shQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

export function installBin(args: readonly string[], io: CliIo): number {
  if (args.length !== 1 || args[0]!.startsWith('-')) throw new CliError('usage: etcdsim install-bin DIR (writes DIR/etcd, a launcher of `etcdsim etcd`)', 2);
  const dir = resolve(args[0]!);
  const entry = fileURLToPath(new URL('../../../bin/etcdsim.js', import.meta.url));
  if (!existsSync(entry)) throw new CliError(`cannot find etcdsim's launcher (${entry})`, 1);
  mkdirSync(dir, { recursive: true });
  const target = join(dir, 'etcd');
  writeFileSync(target, `#!/bin/sh\n# etcdsim as the etcd binary (etcdsim install-bin); ETCDSIM_ETCD_VERSION picks the release.\nexec ${shQuote(process.execPath)} ${shQuote(entry)} etcd "$@"\n`);
  chmodSync(target, 0o755);
  io.out(target);
  return 0;
}
