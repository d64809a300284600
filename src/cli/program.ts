/**
 * The `etcdsim` command line, declared with commander: `demo` (what a bare `etcdsim` runs), `serve`,
 * `run`, `diff`, `shadow` and `playground`, each with `--help`. Each command loads its modules when it runs, so `serve` starts
 * without compiling the scenario runner or the differential engine.
 *
 * Errors: a user error is one line on stderr, `etcdsim CMD: what is wrong`, and a non-zero exit — 2 for
 * usage (unknown command or option, a missing or unparsable value), or the code etcd exits with where
 * `serve` mirrors an etcd check (docs/cli-errors.md lists every case). Never a stack trace.
 */
import { Command, CommanderError, Option } from 'commander';
import { SERVE_FLAG_DEFAULTS as D, type ServeFlags } from './serve_flags.js';
import { ETCD_VERSIONS } from '../etcd/index.js';
import { CliError, consoleIo, type CliIo } from './io.js';

const COMMANDS = ['demo', 'serve', 'run', 'diff', 'shadow', 'playground', 'etcd', 'install-bin'];

function linesOf(text: string): string[] {
  return text.replace(/\n$/, '').split('\n');
}

/** Commander's error text ("error: ...", maybe with a "(Did you mean ...?)" line) as one line. */
function oneLine(message: string): string {
  return message
    .replace(/^error: /, '')
    .trim()
    .replace(/\s*\n\s*/g, ' ');
}

/** Output, errors and exit handling of one command; `prefix` starts its error lines. */
function configure(cmd: Command, io: CliIo, prefix: string): Command {
  return cmd
    .exitOverride()
    .showHelpAfterError(false)
    .configureOutput({
      writeOut: (s) => {
        for (const l of linesOf(s)) io.out(l);
      },
      writeErr: (s) => {
        for (const l of linesOf(s)) io.err(l);
      },
      outputError: (s) => {
        let line = oneLine(s);
        if (line.startsWith('unknown command ')) line += ` (commands: ${COMMANDS.join(', ')})`;
        io.err(`${prefix}: ${line}`);
      },
    });
}

/** Runs a command's work: its exit code, or the CliError's as one line on `err`. */
async function act(io: CliIo, prefix: string, work: () => Promise<number>): Promise<number> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof CliError) {
      io.err(`${prefix}: ${err.message}`);
      return err.exitCode;
    }
    // A bug, not a user error: still one line, the stack only on request.
    const msg = err instanceof Error ? err.message : String(err);
    io.err(`${prefix}: internal error: ${msg.split('\n')[0] ?? ''}${process.env['ETCDSIM_DEBUG'] ? '' : ' (ETCDSIM_DEBUG=1 shows the stack)'}`);
    if (process.env['ETCDSIM_DEBUG'] && err instanceof Error && err.stack !== undefined) for (const l of linesOf(err.stack)) io.err(l);
    return 1;
  }
}

/** An option whose default shows in --help as typed (`default: 128`, not `"128"`). */
function opt(flags: string, description: string, def: string | boolean): Option {
  const o = new Option(flags, description);
  return typeof def === 'boolean' ? o.default(def) : o.default(def, def);
}

/** The whole program; the exit code of the command that ran lands in `result.code`. */
export function buildProgram(io: CliIo, result: { code: number }): Command {
  const program = configure(new Command('etcdsim'), io, 'etcdsim')
    .description('etcd v3 semantics, simulated: MVCC revisions, watches, leases. Without a command: the demo.')
    .usage('[command] [options]');
  for (const add of COMMAND_DECLARATIONS) add(program, io, result);
  return program;
}

/** Every command commander parses, in --help order (`etcd` and `install-bin` read their own command lines: runCli). */
const COMMAND_DECLARATIONS: readonly ((program: Command, io: CliIo, result: { code: number }) => void)[] = [demoCommand, serveCommand, runCommand, diffCommand, shadowCommand, playgroundCommand];

/** `etcdsim demo`: the tour a bare `etcdsim` prints. */
function demoCommand(program: Command, io: CliIo, result: { code: number }): void {
  configure(program.command('demo'), io, 'etcdsim demo')
    .description('print a short tour of the etcd rules the simulator follows (what a bare `etcdsim` runs)')
    .action(async () => {
      result.code = await act(io, 'etcdsim demo', async () => {
        const { runDemo, runWatchLeaseDemo } = await import('./demo.js');
        runDemo(io.out);
        runWatchLeaseDemo(io.out);
        return 0;
      });
    });
}

/** `etcdsim serve`: etcd's flags (serve_flags.ts has their defaults), parsed and checked by serve.ts. */
function serveCommand(program: Command, io: CliIo, result: { code: number }): void {
  configure(program.command('serve'), io, 'etcdsim serve')
    .description("serve etcd's v3 gRPC API (etcdctl, etcd3, any etcd client) from the simulator, on the wall clock; SIGTERM or SIGINT stops it")
    .addOption(opt('--listen-client-urls <url>', 'URL to serve clients on (http:// or https://; port 0 picks a free port); with --members, one per member', D.listenClientUrls))
    .option('--advertise-client-urls <urls>', 'client URLs the member reports (default: the listen URL)')
    .addOption(opt('--initial-advertise-peer-urls <urls>', "the member's peer URLs, as MemberList reports them (they also make its ID)", D.initialAdvertisePeerUrls))
    .addOption(opt('--listen-peer-urls <urls>', 'checked as etcd checks it; no peer port is opened (a single member has no peers)', D.listenPeerUrls))
    .option('--initial-cluster <name=url,...>', 'the initial cluster: this member only (default: NAME=the advertised peer URLs, as etcd)')
    .addOption(opt('--initial-cluster-token <token>', "the initial cluster's token (part of the member and cluster IDs)", D.initialClusterToken))
    .option('--name <name>', "the member's name", D.name)
    .addOption(opt('--max-txn-ops <n>', 'maximum operations in one txn', D.maxTxnOps))
    .addOption(opt('--max-request-bytes <n>', 'maximum request size in bytes (receive limit: this + 512 KiB)', D.maxRequestBytes))
    .addOption(opt('--experimental-watch-progress-notify-interval <duration>', 'progress notify interval, a Go duration (10m, 5s, 1h30m; at least 100ms)', D.experimentalWatchProgressNotifyInterval))
    .addOption(opt('--grpc-keepalive-min-time <duration>', 'how often a client may ping (a Go duration); one that pings more often is disconnected (too_many_pings), as etcd', D.grpcKeepaliveMinTime))
    .addOption(opt('--quota-backend-bytes <bytes>', 'space quota of the (estimated) db file: a write past it raises NOSPACE (0: 2 GiB, below 0: none)', D.quotaBackendBytes))
    .addOption(opt('--heartbeat-interval <ms>', 'heartbeat interval in ms (sets the minimum lease TTL with --election-timeout)', D.heartbeatInterval))
    .addOption(opt('--election-timeout <ms>', 'election timeout in ms (5 to 50000 heartbeats)', D.electionTimeout))
    .addOption(opt('--seed <n>', 'seed of every random choice (lease IDs, progress jitter), 0 to 2^64-1', D.seed))
    .addOption(opt('--clock-speed <x>', 'simulated seconds per wall-clock second, 0.001 to 1000 (e.g. 10 for demos)', D.clockSpeed))
    .addOption(opt('--etcd-version <v>', `which etcd release to behave as: ${ETCD_VERSIONS.join(', ')}`, D.etcdVersion))
    .option('--cert-file <path>', 'TLS certificate (PEM)')
    .option('--key-file <path>', 'TLS private key (PEM)')
    .option('--trusted-ca-file <path>', 'CA bundle; clients must present a certificate it signed')
    .option('--client-cert-auth', 'require client certificates; with auth enabled, a request without a token is made by the user the certificate CN names', false)
    .addOption(opt('--allow-non-loopback', 'allow binding to an interface other than loopback', D.allowNonLoopback))
    .addOption(opt('--auth-token-ttl <s>', 'lifetime of a simple auth token in seconds (0: the default, as etcd)', D.authTokenTtl))
    .option('--bcrypt-cost <n>', "bcrypt cost of password hashes, as etcd's --bcrypt-cost (4..31; etcd's default is 10); default 4, bcrypt's fastest")
    .option('--from-snapshot <file>', "start from a snapshot in etcd's format (`etcdctl snapshot save` of etcd 3.4, or of etcdsim)")
    .option('--members <n>', 'serve a simulated cluster of n members (1 to 7), one --listen-client-urls URL each; fault levers under /etcdsim/cluster (docs/cluster.md)')
    .option('--pre-vote', "with --members: Raft pre-vote (etcd's default: off on 3.4, on from 3.5)")
    .action(async (flags: ServeFlags) => {
      result.code = await act(io, 'etcdsim serve', async () => {
        const { parseServeFlags, runServe } = await import('./serve.js');
        const opts = parseServeFlags(flags, (m) => io.err(`etcdsim serve: ${m}`));
        await runServe(opts, io);
        return 0;
      });
    });
}

/** `etcdsim run`: a scenario script (src/scenario). */
function runCommand(program: Command, io: CliIo, result: { code: number }): void {
  configure(program.command('run'), io, 'etcdsim run')
    .description('run a scenario script (a bundled one by name, or a file): transcript, expectations, --html timeline')
    .argument('[scenario]', 'a scenario file, or the name of a bundled scenario (see --list)')
    .option('--html <file>', 'also write the timeline page to <file>')
    .addOption(opt('--seed <n>', 'seed of the run (a non-negative integer)', '0'))
    .option('--variant <name>', 'run only this variant of the scenario')
    .option('--list', 'list the bundled scenarios and exit')
    .option('--script', 'print the lab as a bash script that does its steps with etcdctl against a real etcd (ETCDCTL_ENDPOINTS), instead of the transcript')
    .addHelpText('after', '\nExit codes: 0 every expectation held; 1 an expectation failed or a step errored; 2 usage or syntax error.')
    .action(async (scenario: string | undefined, opts: RunOptions) => {
      result.code = await act(io, 'etcdsim run', async () => {
        const { executeRun } = await import('./run_command.js');
        return executeRun(scenario, opts, io);
      });
    });
}

/** `etcdsim diff`: the differential against a real etcd (src/diff). */
function diffCommand(program: Command, io: CliIo, result: { code: number }): void {
  configure(program.command('diff'), io, 'etcdsim diff')
    .description('run the same generated workload against a real etcd and the simulator; print the first divergence, shrunk')
    .option('--start-etcd', 'start a throwaway local etcd (fresh data dir, free loopback ports)')
    .option('--etcd-bin <path>', 'the etcd binary for --start-etcd (default: etcd on PATH)')
    .option('--endpoint <host:port>', 'an etcd you run; it must be empty and on loopback unless --force / --allow-non-loopback')
    .option('--force', 'wipe a non-empty etcd (a diff deletes every key, revokes every lease and compacts)')
    .option('--allow-non-loopback', 'allow an endpoint that is not on this machine')
    .option('--seed <n>', 'seed of the workloads (default: a fresh one, printed)')
    .option('--seeds <a..b>', 'run every seed from a to b (each one a diff of --ops ops); see docs/differential.md')
    .option('--workers <n>', 'with --seeds: worker threads, each with its own etcd (with --cluster: its own 3-member etcd per seed) (default 1, or one per --endpoint)')
    .addOption(opt('--ops <n>', 'operations to run', '1000'))
    .addOption(opt('--etcd-version <v>', `the etcd release the simulator follows: ${ETCD_VERSIONS.join(', ')}`, '3.4'))
    .option('--json', 'print the report as JSON')
    .option('--replay <scenario.json>', "replay the requests of a shadow divergence (etcdsim shadow --divergence-dir) through a fresh shadow on the etcd; exit 1 if they diverge again")
    .option('--cluster', 'the cluster differential: a 3-member simulated cluster and a real 3-member etcd under one seeded workload and faults (docs/differential.md)')
    .option('--sim-only', 'with --cluster: the simulated cluster alone (no etcd)')
    .option('--processes', 'with --cluster: the simulated side as three etcdsim processes (etcdsim as the etcd binary), hurt by signals as the real etcd is')
    .option('--no-faults', 'with --cluster: no faults (every write outcome known: exact revision count)')
    .option('--duration <ms>', 'with --cluster: how long the clients run (default 6000)')
    .option('--keep-faults <i,j,...|none>', "with --cluster: keep only these of the seed's planned faults (a shrunk failure's replay)")
    .addHelpText('after', '\nExit codes: 0 nothing diverged; 1 a divergence; 2 usage error or the etcd could not be used.')
    .action(async (opts: DiffOptions) => {
      result.code = await act(io, 'etcdsim diff', async () => {
        const { executeDiff } = await import('./diff_command.js');
        return executeDiff(opts, io);
      });
    });
}

/** `etcdsim shadow`: the proxy in front of a real etcd (src/shadow). */
function shadowCommand(program: Command, io: CliIo, result: { code: number }): void {
  configure(program.command('shadow'), io, 'etcdsim shadow')
    .description("a proxy in front of a real etcd: your application gets etcd's answers, the simulator answers the same requests, every difference is reported")
    .option('--etcd <host:port>', 'the real etcd to forward to (required)')
    .addOption(opt('--listen-client-urls <url>', 'URL the application connects to (http://; port 0 picks a free port)', 'http://127.0.0.1:2379'))
    .addOption(opt('--etcd-version <v>', `the etcd release the simulator follows: ${ETCD_VERSIONS.join(', ')}`, '3.4'))
    .option('--divergence-dir <dir>', 'write each divergence to a directory under <dir>: request, both answers, replayable scenario.json')
    .option('--fail-on-divergence', 'exit with status 1 at the end when anything diverged')
    .addOption(opt('--heartbeat-interval <ms>', "the real etcd's --heartbeat-interval (the minimum lease TTL follows from it)", '100'))
    .addOption(opt('--election-timeout <ms>', "the real etcd's --election-timeout", '1000'))
    .addOption(opt('--auth-token-ttl <s>', "the real etcd's --auth-token-ttl: a token of etcd's unused that long is dropped by the simulator too", '300'))
    .addOption(opt('--stats-interval <s>', 'how often the line of totals goes to stderr, when it changed', '10'))
    .addOption(opt('--max-seed-bytes <bytes>', "the largest etcd db the simulator takes on at the start (it holds the etcd's state in memory); a larger one is refused", String(512 * 1024 * 1024)))
    .option('--allow-non-loopback', 'allow binding to an interface other than loopback')
    .option('--cert-file <path>', 'the shadow\'s TLS certificate (with an https:// --listen-client-urls), as etcd\'s')
    .option('--key-file <path>', 'its key')
    .option('--trusted-ca-file <path>', 'require client certificates signed by this CA, as etcd does')
    .option('--etcd-cacert <path>', 'the CA of the real etcd\'s TLS certificate (talk TLS to it; also with an https:// --etcd)')
    .option('--etcd-cert <path>', 'the client certificate the shadow presents to the real etcd')
    .option('--etcd-key <path>', 'its key')
    .option('--user <name[:password]>', "the shadow's own user on an etcd with auth on, as etcdctl's --user (it needs the root role: etcd's Snapshot seeds the simulator); without a password it asks for one on a terminal")
    .option('--password <password>', 'its password, when --user names the user only')
    .addHelpText(
      'after',
      [
        '',
        'Environment (as etcdctl\'s ETCDCTL_USER and ETCDCTL_PASSWORD, and keeping the password out of the command line, which ps shows):',
        '  ETCDSIM_SHADOW_USER       stands for --user (NAME or NAME:PASSWORD)',
        '  ETCDSIM_SHADOW_PASSWORD   stands for --password',
        'A variable and its flag both given is an error, as in etcdctl.',
        '',
        'SIGTERM or SIGINT stops it and prints the per-RPC summary. Exit codes: 0 stopped; 1 a divergence with --fail-on-divergence, or the port is taken; 2 usage error or the etcd could not be used.',
      ].join('\n'),
    )
    .action(async (opts: import('./shadow_command.js').ShadowCommandOptions) => {
      result.code = await act(io, 'etcdsim shadow', async () => {
        const { executeShadow } = await import('./shadow_command.js');
        return executeShadow(opts, io);
      });
    });
}

/** `etcdsim playground`: the scenario playground page. */
function playgroundCommand(program: Command, io: CliIo, result: { code: number }): void {
  configure(program.command('playground'), io, 'etcdsim playground')
    .description('the scenario playground in a browser: edit a script, it reruns on every edit; --out writes a static page, else it is served on loopback')
    .option('--out <dir>', 'write the page to <dir>/index.html (one file; works offline from a file:// URL) instead of serving it')
    .addOption(opt('--port <n>', 'loopback port to serve on (0: any free port)', '0'))
    .action(async (opts: { out?: string | undefined; port: string }) => {
      result.code = await act(io, 'etcdsim playground', async () => {
        const { executePlayground } = await import('./playground_command.js');
        return executePlayground(opts, io);
      });
    });
}

/** `etcdsim run`'s options as commander hands them over. */
export interface RunOptions {
  html?: string | undefined;
  seed: string;
  variant?: string | undefined;
  list?: boolean | undefined;
  script?: boolean | undefined;
}

/** `etcdsim diff`'s options as commander hands them over. */
export interface DiffOptions {
  startEtcd?: boolean | undefined;
  etcdBin?: string | undefined;
  endpoint?: string | undefined;
  force?: boolean | undefined;
  allowNonLoopback?: boolean | undefined;
  seed?: string | undefined;
  seeds?: string | undefined;
  workers?: string | undefined;
  ops: string;
  etcdVersion: string;
  json?: boolean | undefined;
  /** --replay scenario.json: a shadow divergence's requests (src/shadow/replay.ts). */
  replay?: string | undefined;
  /** --cluster and its options (diff_command.ts executeClusterDiff). */
  cluster?: boolean | undefined;
  simOnly?: boolean | undefined;
  processes?: boolean | undefined;
  faults?: boolean | undefined;
  duration?: string | undefined;
  keepFaults?: string | undefined;
}

/**
 * Runs `etcdsim ARGV...` (the words after `etcdsim`; none runs the demo) and resolves to its exit code.
 * `serve` resolves once it is listening and keeps the process alive.
 */
export async function runCli(argv: readonly string[], io: CliIo = consoleIo): Promise<number> {
  // `etcdsim etcd` reads etcd's own command line (Go's flag syntax), not commander's.
  if (argv[0] === 'etcd') {
    const { runEtcd } = await import('./etcd/run.js');
    return runEtcd(argv.slice(1), io);
  }
  if (argv[0] === 'install-bin') {
    const { installBin } = await import('./etcd/install_bin.js');
    return act(io, 'etcdsim install-bin', async () => installBin(argv.slice(1), io));
  }
  const result = { code: 0 };
  const program = buildProgram(io, result);
  try {
    await program.parseAsync(argv.length === 0 ? ['demo'] : [...argv], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    throw err;
  }
  return result.code;
}
