/**
 * `etcdsim install-bin DIR`: puts an executable named `etcd` into DIR that starts `etcdsim etcd` with the
 * arguments it is given, for harnesses that take a bin directory (etcd's e2e framework's `-bin-dir`) or look
 * for `etcd` on PATH. The launcher names this Node and this package by absolute path, so it works from
 * anywhere, and reads bin/etcd_launch.sh (start-up snapshot or bin/etcdsim.js) at every start, so a rebuilt or
 * updated package needs no new launcher; the release it behaves as is ETCDSIM_ETCD_VERSION's, read when it
 * starts.
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
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const launch = join(root, 'bin', 'etcd_launch.sh');
  if (!existsSync(launch)) throw new CliError(`cannot find etcdsim's launcher (${launch})`, 1);
  mkdirSync(dir, { recursive: true });
  const target = join(dir, 'etcd');
  const lines = [
    '#!/bin/sh',
    '# etcdsim as the etcd binary (etcdsim install-bin); ETCDSIM_ETCD_VERSION picks the release.',
    `ETCDSIM_NODE=${shQuote(process.execPath)}`,
    `ETCDSIM_ROOT=${shQuote(root.replace(/\/$/, ''))}`,
    `. ${shQuote(launch)}`,
  ];
  writeFileSync(target, `${lines.join('\n')}\n`);
  chmodSync(target, 0o755);
  io.out(target);
  return 0;
}
