/**
 * The `etcd` command's own way in: what bin/etcdsim.js runs for `etcdsim etcd` and for the launcher
 * `install-bin` writes. A harness such as etcd's e2e suite starts a member for every test, so this path
 * loads only what one member needs — not commander, not the other commands — and the build bundles it, with
 * every package it reaches, into one file (dist/etcd.cjs) that the launcher compiles from V8's code cache
 * (bin/etcd_bundle.js): etcd starts in a fraction of a second, and so must its stand-in.
 */
import { consoleIo, exitQuietlyOnClosedPipe } from '../io.js';
import { runEtcd, type EtcdRunHooks } from './run.js';

/**
 * Runs `etcd ARGV...` on the console: resolves with the exit code when it stops on its own (a refused flag,
 * `--version`), or never while it serves (SIGINT / SIGTERM end the process).
 */
export function runEtcdCommand(argv: readonly string[], hooks: EtcdRunHooks = {}): Promise<number> {
  exitQuietlyOnClosedPipe();
  return runEtcd(argv, consoleIo, process.env, hooks);
}
