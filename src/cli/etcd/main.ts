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
import type * as grpc from '@grpc/grpc-js';
import type { PackageDefinition } from '@grpc/proto-loader';
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
  const [{ checkedService, requestDecodingOf }, { SERVICE_PACKAGES, etcdPackageDefinition, etcdServiceDefinition }] = await Promise.all([
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
  warmCodecs(etcdPackageDefinition(), etcdServiceDefinition, SERVICE_PACKAGES, ['KV', 'Lease']);
}

/** A message of a proto-loader descriptor, as far as warmCodecs reads it. */
interface MessageDescriptor {
  readonly field: ReadonlyArray<{ readonly name: string; readonly type: string; readonly typeName: string; readonly label: string }>;
}

/**
 * protobuf.js makes each message type's encoder, decoder and object converters the first time the type is
 * used: code generated and compiled in the process, on a member's first call. Here every request and response
 * of the `services` goes once through its codecs, each message field set (to depth 3), so the generated
 * functions, run once, are in the snapshot with their bytecode. Only KV and Lease: the first call of nearly
 * every e2e test (a put, a lease grant — TestCtlV3Lock's etcdctl must have its lease within 200 ms), which
 * this makes ~4.5 ms cheaper for ~3 ms more of every start; all services cost a start 7.5 ms (the blob grows
 * by 1 MB) for the same gain (docs/e2e.md, "Session 15"). Pure: the codecs keep nothing besides the functions
 * they made.
 */
function warmCodecs(pd: PackageDefinition, service: (name: EtcdServiceName) => grpc.ServiceDefinition, packages: Readonly<Record<EtcdServiceName, string>>, services: readonly EtcdServiceName[]): void {
  const descriptorOf = (pkg: string, typeName: string): { pkg: string; type: MessageDescriptor } | undefined => {
    for (const full of [`${pkg}.${typeName}`, typeName]) {
      const d = pd[full] as { type?: MessageDescriptor } | undefined;
      if (d?.type?.field !== undefined) return { pkg: full.slice(0, full.lastIndexOf('.')), type: d.type };
    }
    return undefined;
  };
  const sample = (pkg: string, type: MessageDescriptor, depth: number): Record<string, unknown> => {
    const o: Record<string, unknown> = {};
    if (depth === 3) return o;
    for (const f of type.field) {
      if (f.type !== 'TYPE_MESSAGE') continue;
      const nested = descriptorOf(pkg, f.typeName);
      if (nested === undefined) continue;
      const v = sample(nested.pkg, nested.type, depth + 1);
      o[f.name] = f.label === 'LABEL_REPEATED' ? [v] : v;
    }
    return o;
  };
  for (const name of services) {
    for (const m of Object.values(service(name))) {
      const typed = m as typeof m & { requestType: { type: MessageDescriptor }; responseType: { type: MessageDescriptor } };
      const pkg = packages[name];
      m.requestDeserialize(m.requestSerialize(sample(pkg, typed.requestType.type, 0)));
      m.responseDeserialize(m.responseSerialize(sample(pkg, typed.responseType.type, 0)));
    }
  }
}
