/**
 * The `etcdsim` command line: `demo` (the default), `serve`, `run` and `diff`. Each command loads its
 * modules when it runs, so `serve` starts without compiling the scenario runner or the differential engine.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { SERVE_FLAG_DEFAULTS as D, type ServeFlags } from './serve_flags.js';

const program = new Command();
program
  .name('etcdsim')
  .description('etcd v3 semantics, simulated: MVCC revisions, watches, leases')
  .showHelpAfterError()
  .exitOverride((err) => {
    process.exit(err.exitCode === 0 ? 0 : 2);
  });

program
  .command('demo', { isDefault: true })
  .description('print a short tour of the etcd rules the simulator follows')
  .action(async () => {
    const { runDemo, runWatchLeaseDemo } = await import('./demo.js');
    runDemo((line) => console.log(line));
    runWatchLeaseDemo((line) => console.log(line));
  });

const int = (name: string) => (v: string): number => {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new InvalidArgumentError(`${name} must be a non-negative integer`);
  return n;
};

program
  .command('serve')
  .description("serve etcd's v3 gRPC API (etcdctl, etcd3, any etcd client) from the simulator, on the wall clock")
  .option('--listen-client-urls <url>', 'URL to serve clients on (http:// or https://; port 0 picks a free port)', D.listenClientUrls)
  .option('--advertise-client-urls <urls>', 'client URLs the member reports (default: the listen URL)')
  .option('--name <name>', "the member's name", D.name)
  .option('--max-txn-ops <n>', 'maximum operations in one txn', int('--max-txn-ops'), D.maxTxnOps)
  .option('--max-request-bytes <n>', 'maximum request size in bytes (receive limit: this + 512 KiB)', int('--max-request-bytes'), D.maxRequestBytes)
  .option('--experimental-watch-progress-notify-interval <duration>', 'progress notify interval (e.g. 10m, 5s, 500ms)', D.experimentalWatchProgressNotifyInterval)
  .option('--heartbeat-interval <ms>', 'heartbeat interval in ms (sets the minimum lease TTL with --election-timeout)', int('--heartbeat-interval'), D.heartbeatInterval)
  .option('--election-timeout <ms>', 'election timeout in ms', int('--election-timeout'), D.electionTimeout)
  .option('--seed <n>', 'seed of every random choice (lease IDs, progress jitter)', D.seed)
  .option('--clock-speed <x>', 'simulated seconds per wall-clock second (e.g. 10 for demos)', D.clockSpeed)
  .addOption(new Option('--etcd-version <v>', 'which etcd release to behave as').choices(['3.4', '3.5', '3.6', '3.7']).default(D.etcdVersion))
  .option('--cert-file <path>', 'TLS certificate (PEM)')
  .option('--key-file <path>', 'TLS private key (PEM)')
  .option('--trusted-ca-file <path>', 'CA bundle; clients must present a certificate it signed')
  .option('--client-cert-auth', 'require client certificates; with auth enabled, a request without a token is made by the user the certificate CN names', false)
  .option('--allow-non-loopback', 'allow binding to an interface other than loopback', D.allowNonLoopback)
  .option('--auth-token-ttl <s>', 'lifetime of a simple auth token in seconds', int('--auth-token-ttl'), D.authTokenTtl)
  .option('--bcrypt-cost <n>', 'password hashing cost as etcd (10); default: fast hashing for tests', int('--bcrypt-cost'))
  .action(async (flags: ServeFlags) => {
    const { parseServeFlags, runServe } = await import('./serve.js');
    let opts;
    try {
      opts = parseServeFlags(flags);
    } catch (err) {
      console.error(`etcdsim serve: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(2);
    }
    await runServe(opts);
  });

program
  .command('run')
  .description('run a scenario script (a bundled one by name, or a file): transcript, expectations, --html timeline; --list lists them')
  .argument('[args...]', 'FILE|NAME [--html OUT] [--seed N] [--variant NAME] | --list')
  .allowUnknownOption()
  .helpOption(false)
  .action(async (args: string[]) => {
    const { runCommand } = await import('./run_command.js');
    process.exitCode = await runCommand(args, (line) => console.log(line));
  });

program
  .command('diff')
  .description('run the same generated workload against a real etcd and the simulator; print the first divergence, shrunk')
  .argument('[args...]', '--start-etcd [--etcd-bin PATH] | --endpoint HOST:PORT, --seed N, --ops N, --etcd-version V, --json')
  .allowUnknownOption()
  .helpOption(false)
  .action(async (args: string[]) => {
    const { runDiff } = await import('./diff_command.js');
    process.exitCode = await runDiff(args, (line) => console.log(line));
  });

await program.parseAsync(process.argv);
