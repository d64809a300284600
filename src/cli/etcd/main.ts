/**
 * The `etcd` command's own way in: what bin/etcdsim.js runs for `etcdsim etcd` and for the launcher
 * `install-bin` writes. A harness such as etcd's e2e suite starts a member for every test, so this path
 * loads only what one member needs — not commander, not the other commands — and the build bundles it, with
 * every package it reaches, into one file (dist/etcd.cjs) that starts from a V8 start-up snapshot
 * (bin/etcd_snapshot.cjs, where prepareMember ran while it was built) or, without one, is compiled from V8's
 * code cache (bin/etcd_bundle.js): etcd starts in a fraction of a second, and so must its stand-in.
 */
import { consoleIo, exitQuietlyOnClosedPipe } from '../io.js';
import { runEtcd, type EtcdRunHooks } from './run.js';
import type { EtcdServiceName } from '../../proto/index.js';

/**
 * Runs `etcd ARGV...` on the console: resolves with the exit code when it stops on its own (a refused flag,
 * `--version`), or never while it serves (SIGINT / SIGTERM end the process).
 */
export function runEtcdCommand(argv: readonly string[], hooks: EtcdRunHooks = {}): Promise<number> {
  exitQuietlyOnClosedPipe();
  return runEtcd(argv, consoleIo, process.env, hooks);
}

/**
 * Does, once and ahead of any process, what every member's start does the same way whatever its flags:
 * evaluates the modules a member loads (a single member's and a cluster process's) and builds etcd's proto
 * descriptors with the request checks of both decoders (gogo's up to 3.6, protobuf-go's from 3.7). The
 * snapshot builder runs it, so a started member finds all of it in its heap. It reads no clock, environment,
 * file descriptor or flag (none of which would be the started process's), and leaves nothing pending.
 */
export async function prepareMember(): Promise<void> {
  const [{ checkedService, requestDecodingOf }, { SERVICE_PACKAGES }] = await Promise.all([
    import('../../grpc/request_decoding.js'),
    import('../../proto/index.js'),
    import('../serve.js'),
    import('./run_cluster.js'),
    import('../../server/kept_member.js'),
    import('../../grpc/server.js'),
    import('../../peer/process_member.js'),
    import('../../grpc/serve_process.js'),
    import('./auto_tls.js').then((m) => m.prepareAutoTls()),
  ]);
  for (const version of ['3.4', '3.7'] as const) for (const name of Object.keys(SERVICE_PACKAGES) as EtcdServiceName[]) checkedService(name, requestDecodingOf(version, 0));
}
