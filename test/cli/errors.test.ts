/**
 * The command line fails fast and clearly (issue 14 item 3): every row of the table below is a test that
 * spawns `node bin/etcdsim.js ...` and checks the exit code, that stderr is exactly the one line given (or,
 * for a command that starts, exactly the warnings etcd gives, then the ready line), and that nothing but
 * help or results ever goes to stdout. Rows marked with etcd's behaviour are also run against etcd 3.4.23
 * (when it is on PATH; always in CI): etcd must exit with the same code and print the text given.
 *
 * docs/cli-errors.md is this table, rendered (a test checks it is up to date; regenerate it with
 * `ETCDSIM_WRITE_DOCS=1 node --import tsx --test test/cli/errors.test.ts`).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/diff/etcd_process.js';
import { requireCommand } from '../support/prerequisites.js';

const skipEtcd = requireCommand('etcd');

/** What etcd 3.4.23 does with the same serve flags. */
type EtcdBehaviour =
  | { readonly exits: number; readonly text: string }
  /** etcd starts; `text` is the warning it logs, if any. */
  | { readonly starts: true; readonly text?: string };

interface Row {
  /** The words after `etcdsim`. `BUSY_PORT` stands for a port another process listens on. */
  readonly args: readonly string[];
  readonly code: number;
  /** Every line on stderr (one for an error; the warnings for a serve that starts). */
  readonly stderr: readonly string[];
  /** A serve that starts: ready line, then SIGTERM → exit 0. */
  readonly starts?: boolean;
  readonly etcd?: EtcdBehaviour;
  /** One line for the docs column (what else to know). */
  readonly note?: string;
  /** A scenario run: its transcript goes to stdout before the error. */
  readonly transcript?: boolean;
}

const LISTEN0 = ['--listen-client-urls', 'http://127.0.0.1:0'];
const FIX = 'test/cli/fixtures';

/** The table. Exit 2: usage (unknown command / option, a value that does not parse); 1: what etcd rejects after parsing, or the run failed. */
export const ROWS: readonly Row[] = [
  // ── top level ────────────────────────────────────────────────────────────────────────────────────
  { args: ['frobnicate'], code: 2, stderr: ["etcdsim: unknown command 'frobnicate' (commands: demo, serve, run, diff, shadow, playground, etcd, install-bin)"] },
  { args: ['--frobnicate'], code: 2, stderr: ["etcdsim: unknown option '--frobnicate'"] },
  { args: ['demo', 'extra'], code: 2, stderr: ["etcdsim demo: too many arguments for 'demo'. Expected 0 arguments but got 1."] },

  // ── serve: values Go's flag package rejects (etcd: usage, exit 2) ─────────────────────────────────
  { args: ['serve', '--max-txn-ops', '-1'], code: 2, stderr: ['etcdsim serve: invalid value "-1" for flag --max-txn-ops: parse error'], etcd: { exits: 2, text: 'invalid value "-1" for flag -max-txn-ops: parse error' } },
  { args: ['serve', '--max-txn-ops', 'x'], code: 2, stderr: ['etcdsim serve: invalid value "x" for flag --max-txn-ops: parse error'], etcd: { exits: 2, text: 'invalid value "x" for flag -max-txn-ops: parse error' } },
  {
    args: ['serve', '--max-txn-ops', '18446744073709551616'],
    code: 2,
    stderr: ['etcdsim serve: invalid value "18446744073709551616" for flag --max-txn-ops: value out of range'],
    etcd: { exits: 2, text: 'invalid value "18446744073709551616" for flag -max-txn-ops: value out of range' },
  },
  { args: ['serve', '--max-request-bytes', '-1'], code: 2, stderr: ['etcdsim serve: invalid value "-1" for flag --max-request-bytes: parse error'], etcd: { exits: 2, text: 'invalid value "-1" for flag -max-request-bytes: parse error' } },
  { args: ['serve', '--heartbeat-interval', '-1'], code: 2, stderr: ['etcdsim serve: invalid value "-1" for flag --heartbeat-interval: parse error'], etcd: { exits: 2, text: 'invalid value "-1" for flag -heartbeat-interval: parse error' } },
  { args: ['serve', '--election-timeout', '1.5'], code: 2, stderr: ['etcdsim serve: invalid value "1.5" for flag --election-timeout: parse error'], etcd: { exits: 2, text: 'invalid value "1.5" for flag -election-timeout: parse error' } },
  { args: ['serve', '--auth-token-ttl', '-1'], code: 2, stderr: ['etcdsim serve: invalid value "-1" for flag --auth-token-ttl: parse error'], etcd: { exits: 2, text: 'invalid value "-1" for flag -auth-token-ttl: parse error' } },
  { args: ['serve', '--bcrypt-cost', 'x'], code: 2, stderr: ['etcdsim serve: invalid value "x" for flag --bcrypt-cost: parse error'], etcd: { exits: 2, text: 'invalid value "x" for flag -bcrypt-cost: parse error' } },
  {
    args: ['serve', '--experimental-watch-progress-notify-interval', '10'],
    code: 2,
    stderr: ['etcdsim serve: invalid value "10" for flag --experimental-watch-progress-notify-interval: parse error'],
    etcd: { exits: 2, text: 'invalid value "10" for flag -experimental-watch-progress-notify-interval: parse error' },
    note: 'a Go duration needs a unit: 10s, 10m',
  },
  {
    args: ['serve', '--listen-client-urls', 'http://127.0.0.1:2379/x'],
    code: 2,
    stderr: ['etcdsim serve: invalid value "http://127.0.0.1:2379/x" for flag --listen-client-urls: URL must not contain a path: http://127.0.0.1:2379/x'],
    etcd: { exits: 2, text: 'invalid value "http://127.0.0.1:2379/x" for flag -listen-client-urls: URL must not contain a path: http://127.0.0.1:2379/x' },
  },
  {
    args: ['serve', '--listen-client-urls', '127.0.0.1:2379'],
    code: 2,
    stderr: ['etcdsim serve: invalid value "127.0.0.1:2379" for flag --listen-client-urls: parse "127.0.0.1:2379": first path segment in URL cannot contain colon'],
    etcd: { exits: 2, text: 'invalid value "127.0.0.1:2379" for flag -listen-client-urls: parse "127.0.0.1:2379": first path segment in URL cannot contain colon' },
  },
  {
    args: ['serve', '--listen-client-urls', 'ftp://127.0.0.1:2379'],
    code: 2,
    stderr: ['etcdsim serve: invalid value "ftp://127.0.0.1:2379" for flag --listen-client-urls: URL scheme must be http, https, unix, or unixs: ftp://127.0.0.1:2379'],
    etcd: { exits: 2, text: 'invalid value "ftp://127.0.0.1:2379" for flag -listen-client-urls: URL scheme must be http, https, unix, or unixs: ftp://127.0.0.1:2379' },
  },
  {
    args: ['serve', '--listen-client-urls', 'http://127.0.0.1'],
    code: 2,
    stderr: ['etcdsim serve: invalid value "http://127.0.0.1" for flag --listen-client-urls: URL address does not have the form "host:port": http://127.0.0.1'],
    etcd: { exits: 2, text: 'invalid value "http://127.0.0.1" for flag -listen-client-urls: URL address does not have the form "host:port": http://127.0.0.1' },
  },
  {
    args: ['serve', '--advertise-client-urls', 'http://127.0.0.1:2379/x'],
    code: 2,
    stderr: ['etcdsim serve: invalid value "http://127.0.0.1:2379/x" for flag --advertise-client-urls: URL must not contain a path: http://127.0.0.1:2379/x'],
    etcd: { exits: 2, text: 'invalid value "http://127.0.0.1:2379/x" for flag -advertise-client-urls: URL must not contain a path: http://127.0.0.1:2379/x' },
  },
  {
    args: ['serve', '--initial-advertise-peer-urls', 'http://127.0.0.1:2380/x'],
    code: 2,
    stderr: ['etcdsim serve: invalid value "http://127.0.0.1:2380/x" for flag --initial-advertise-peer-urls: URL must not contain a path: http://127.0.0.1:2380/x'],
    etcd: { exits: 2, text: 'invalid value "http://127.0.0.1:2380/x" for flag -initial-advertise-peer-urls: URL must not contain a path: http://127.0.0.1:2380/x' },
  },
  {
    args: ['serve', '--listen-peer-urls', 'ftp://127.0.0.1:2380'],
    code: 2,
    stderr: ['etcdsim serve: invalid value "ftp://127.0.0.1:2380" for flag --listen-peer-urls: URL scheme must be http, https, unix, or unixs: ftp://127.0.0.1:2380'],
    etcd: { exits: 2, text: 'invalid value "ftp://127.0.0.1:2380" for flag -listen-peer-urls: URL scheme must be http, https, unix, or unixs: ftp://127.0.0.1:2380' },
  },
  { args: ['serve', '--frobnicate'], code: 2, stderr: ["etcdsim serve: unknown option '--frobnicate'"], etcd: { exits: 2, text: 'flag provided but not defined: -frobnicate' } },
  { args: ['serve', '--max-txn-ops'], code: 2, stderr: ["etcdsim serve: option '--max-txn-ops <n>' argument missing"], etcd: { exits: 2, text: 'flag needs an argument: -max-txn-ops' } },
  { args: ['serve', 'extra'], code: 2, stderr: ["etcdsim serve: too many arguments for 'serve'. Expected 0 arguments but got 1."] },

  // ── serve: etcd's checks after parsing (etcdmain, exit 1) ─────────────────────────────────────────
  {
    args: ['serve', '--heartbeat-interval', '0'],
    code: 1,
    stderr: ["etcdsim serve: error verifying flags, --heartbeat-interval must be >0 (set to 0ms). See 'etcdsim serve --help'."],
    etcd: { exits: 1, text: "error verifying flags, --heartbeat-interval must be >0 (set to 0ms). See 'etcd --help'." },
  },
  {
    args: ['serve', '--election-timeout', '0'],
    code: 1,
    stderr: ["etcdsim serve: error verifying flags, --election-timeout must be >0 (set to 0ms). See 'etcdsim serve --help'."],
    etcd: { exits: 1, text: "error verifying flags, --election-timeout must be >0 (set to 0ms). See 'etcd --help'." },
  },
  {
    args: ['serve', '--election-timeout', '400'],
    code: 1,
    stderr: ["etcdsim serve: error verifying flags, --election-timeout[400ms] should be at least as 5 times as --heartbeat-interval[100ms]. See 'etcdsim serve --help'."],
    etcd: { exits: 1, text: "error verifying flags, --election-timeout[400ms] should be at least as 5 times as --heartbeat-interval[100ms]. See 'etcd --help'." },
  },
  {
    args: ['serve', '--election-timeout', '60000'],
    code: 1,
    stderr: ["etcdsim serve: error verifying flags, --election-timeout[60000ms] is too long, and should be set less than 50000ms. See 'etcdsim serve --help'."],
    etcd: { exits: 1, text: "error verifying flags, --election-timeout[60000ms] is too long, and should be set less than 50000ms. See 'etcd --help'." },
  },

  // ── serve: what etcd finds when it starts (exit 1) ────────────────────────────────────────────────
  { args: ['serve', '--name', ''], code: 1, stderr: ['etcdsim serve: couldn\'t find local name "" in the initial cluster configuration'], etcd: { exits: 1, text: 'couldn\'t find local name "" in the initial cluster configuration' } },
  {
    args: ['serve', '--initial-cluster', 'default=bad'],
    code: 1,
    stderr: ['etcdsim serve: error setting up initial cluster: URL scheme must be http, https, unix, or unixs: bad'],
    etcd: { exits: 1, text: 'error setting up initial cluster: URL scheme must be http, https, unix, or unixs: bad' },
  },
  {
    args: ['serve', '--initial-cluster', 'other=http://localhost:2380'],
    code: 1,
    stderr: ['etcdsim serve: couldn\'t find local name "default" in the initial cluster configuration'],
    etcd: { exits: 1, text: 'couldn\'t find local name "default" in the initial cluster configuration' },
  },
  {
    args: ['serve', '--initial-advertise-peer-urls', 'http://127.0.0.1:2390'],
    code: 1,
    stderr: ['etcdsim serve: --initial-cluster has default=http://localhost:2380 but missing from --initial-advertise-peer-urls=http://127.0.0.1:2390 (resolved urls: "http://127.0.0.1:2390" != "http://localhost:2380")'],
    etcd: { exits: 1, text: '--initial-cluster has default=http://localhost:2380 but missing from --initial-advertise-peer-urls=http://127.0.0.1:2390 (resolved urls: "http://127.0.0.1:2390" != "http://localhost:2380")' },
    note: "the default --initial-cluster is default=http://localhost:2380 for the default --name: give both flags (another --name alone takes the advertised URLs)",
  },
  { args: ['serve', '--listen-client-urls', 'http://127.0.0.1:99999'], code: 1, stderr: ['etcdsim serve: listen tcp: address 99999: invalid port'], etcd: { exits: 1, text: 'listen tcp: address 99999: invalid port' } },
  {
    args: ['serve', '--listen-client-urls', 'http://127.0.0.1:BUSY_PORT'],
    code: 1,
    stderr: ['etcdsim serve: listen tcp 127.0.0.1:BUSY_PORT: bind: address already in use'],
    etcd: { exits: 1, text: 'listen tcp 127.0.0.1:BUSY_PORT: bind: address already in use' },
    note: 'BUSY_PORT: a port another process listens on; no grpc-js log line',
  },
  {
    args: ['serve', '--listen-client-urls', 'https://127.0.0.1:0'],
    code: 1,
    stderr: ['etcdsim serve: an https:// listen URL needs --cert-file and --key-file (client url https://127.0.0.1:0)'],
    etcd: { exits: 1, text: 'TLS key/cert (--cert-file, --key-file) must be provided for client url https://127.0.0.1:0 with HTTPS scheme' },
  },
  {
    args: ['serve', '--listen-client-urls', 'https://127.0.0.1:0', '--cert-file', '/nonexistent/server.crt'],
    code: 1,
    stderr: ['etcdsim serve: --cert-file and --key-file go together (etcd: KeyFile and CertFile must both be present[key: , cert: /nonexistent/server.crt])'],
    etcd: { exits: 1, text: 'KeyFile and CertFile must both be present[key: , cert: /nonexistent/server.crt]' },
  },
  {
    args: ['serve', '--listen-client-urls', 'https://127.0.0.1:0', '--cert-file', '/nonexistent/server.crt', '--key-file', '/nonexistent/server.key'],
    code: 1,
    stderr: ['etcdsim serve: open /nonexistent/server.crt: no such file or directory'],
    etcd: { exits: 1, text: 'open /nonexistent/server.crt: no such file or directory' },
  },
  {
    args: ['serve', '--listen-client-urls', 'https://127.0.0.1:0', '--cert-file', 'package.json', '--key-file', 'package.json'],
    code: 1,
    stderr: ['etcdsim serve: tls: failed to find any PEM data in certificate input'],
    etcd: { exits: 1, text: 'tls: failed to find any PEM data in certificate input' },
  },
  {
    args: ['serve', '--listen-client-urls', 'http://10.1.2.3:2379'],
    code: 1,
    stderr: ['etcdsim serve: refusing to bind 10.1.2.3: not a loopback address (allow it with --allow-non-loopback)'],
    note: 'etcdsim only binds loopback unless told; etcd exits 1 too (here: listen tcp 10.1.2.3:2379: bind: cannot assign requested address)',
  },

  // ── serve: etcdsim's own flags and limits (usage, exit 2) ─────────────────────────────────────────
  { args: ['serve', '--seed', '-1'], code: 2, stderr: ['etcdsim serve: invalid value "-1" for flag --seed: must be an integer from 0 to 18446744073709551615'] },
  {
    args: ['serve', '--seed', '18446744073709551616'],
    code: 2,
    stderr: ['etcdsim serve: invalid value "18446744073709551616" for flag --seed: must be an integer from 0 to 18446744073709551615'],
  },
  { args: ['serve', '--clock-speed', '1e308'], code: 2, stderr: ['etcdsim serve: invalid value "1e308" for flag --clock-speed: must be a number from 0.001 to 1000'] },
  { args: ['serve', '--clock-speed', '0'], code: 2, stderr: ['etcdsim serve: invalid value "0" for flag --clock-speed: must be a number from 0.001 to 1000'] },
  { args: ['serve', '--etcd-version', '3.3'], code: 2, stderr: ['etcdsim serve: invalid value "3.3" for flag --etcd-version: must be one of 3.4, 3.5, 3.6, 3.7'] },
  {
    args: ['serve', '--listen-client-urls', 'http://127.0.0.1:2379,http://127.0.0.1:2380'],
    code: 2,
    stderr: ['etcdsim serve: invalid value "http://127.0.0.1:2379,http://127.0.0.1:2380" for flag --listen-client-urls: etcdsim serves exactly one client URL'],
    note: 'etcd listens on both',
  },
  { args: ['serve', '--members', '0'], code: 2, stderr: ['etcdsim serve: invalid value "0" for flag --members: must be an integer from 1 to 7'] },
  { args: ['serve', '--members', 'three'], code: 2, stderr: ['etcdsim serve: invalid value "three" for flag --members: must be an integer from 1 to 7'] },
  {
    args: ['serve', '--members', '3', '--listen-client-urls', 'http://127.0.0.1:2379'],
    code: 2,
    stderr: ['etcdsim serve: invalid value "http://127.0.0.1:2379" for flag --listen-client-urls: --members 3 takes one client URL per member'],
  },
  {
    args: ['serve', '--members', '2', '--listen-client-urls', 'http://127.0.0.1:2379,https://127.0.0.1:22379'],
    code: 2,
    stderr: ['etcdsim serve: invalid value "http://127.0.0.1:2379,https://127.0.0.1:22379" for flag --listen-client-urls: every member serves the same scheme'],
  },
  {
    args: ['serve', '--members', '2', '--listen-client-urls', 'http://127.0.0.1:2379,http://127.0.0.1:22379', '--from-snapshot', 'x.db'],
    code: 2,
    stderr: ['etcdsim serve: invalid value "x.db" for flag --from-snapshot: a simulated cluster starts empty (--from-snapshot serves one member)'],
  },
  {
    args: ['serve', '--initial-cluster', 'default=http://localhost:2380,other=http://127.0.0.1:2390'],
    code: 2,
    stderr: ['etcdsim serve: invalid value "default=http://localhost:2380,other=http://127.0.0.1:2390" for flag --initial-cluster: etcdsim serves a single-member cluster'],
    note: 'etcd starts and waits for the other member',
  },
  {
    args: ['serve', '--listen-client-urls', 'unix://localhost:2379'],
    code: 2,
    stderr: ['etcdsim serve: invalid value "unix://localhost:2379" for flag --listen-client-urls: etcdsim serves http:// and https:// URLs only, not unix sockets'],
    note: 'etcd listens on a unix socket',
  },

  // ── serve: accepted as etcd accepts them (starts; exit 0 on SIGTERM) ─────────────────────────────
  { args: ['serve', ...LISTEN0, '--max-txn-ops', '0'], code: 0, starts: true, stderr: [], etcd: { starts: true }, note: 'every txn with an operation then fails: etcdserver: too many operations in txn request' },
  {
    args: ['serve', ...LISTEN0, '--name', 'n1', '--initial-advertise-peer-urls', 'http://127.0.0.1:2390'],
    code: 0,
    starts: true,
    stderr: [],
    etcd: { starts: true },
    note: 'the initial cluster is then n1=http://127.0.0.1:2390; MemberList reports that peer URL (no peer port is opened)',
  },
  { args: ['serve', ...LISTEN0, '--max-txn-ops', '0x10'], code: 0, starts: true, stderr: [], etcd: { starts: true }, note: "Go's base prefixes: 16" },
  { args: ['serve', ...LISTEN0, '--max-request-bytes', '0'], code: 0, starts: true, stderr: [], etcd: { starts: true }, note: 'every write then fails: etcdserver: request is too large' },
  {
    args: ['serve', ...LISTEN0, '--max-request-bytes', '20000000'],
    code: 0,
    starts: true,
    stderr: ['etcdsim serve: MaxRequestBytes 20000000 exceeds maximum recommended size 10485760'],
    etcd: { starts: true, text: 'MaxRequestBytes 20000000 exceeds maximum recommended size 10485760' },
  },
  { args: ['serve', ...LISTEN0, '--auth-token-ttl', '0'], code: 0, starts: true, stderr: [], etcd: { starts: true }, note: 'a TTL of 0 is the default, 300 s (etcd: tokens outlive 1 s)' },
  {
    args: ['serve', ...LISTEN0, '--bcrypt-cost', '99'],
    code: 0,
    starts: true,
    stderr: ['etcdsim serve: Use default bcrypt-cost 10 instead of the invalid value 99'],
    etcd: { starts: true, text: 'Use default bcrypt-cost 10 instead of the invalid value 99' },
    note: 'likewise below 4',
  },
  {
    args: ['serve', ...LISTEN0, '--experimental-watch-progress-notify-interval', '10ms'],
    code: 0,
    starts: true,
    stderr: ['etcdsim serve: adjusting watch progress notify interval to minimum period 100ms'],
    etcd: { starts: true, text: 'adjusting watch progress notify interval to minimum period 100ms' },
  },
  { args: ['serve', ...LISTEN0, '--experimental-watch-progress-notify-interval', '0'], code: 0, starts: true, stderr: [], etcd: { starts: true }, note: '0 or less: the default, 10m' },

  // ── run ──────────────────────────────────────────────────────────────────────────────────────────
  { args: ['run'], code: 2, stderr: ['etcdsim run: missing the scenario: a FILE, or the NAME of a bundled one (etcdsim run --list)'] },
  { args: ['run', 'no-such-scenario'], code: 2, stderr: ['etcdsim run: no such scenario file or bundled scenario: no-such-scenario (etcdsim run --list shows the bundled ones)'] },
  { args: ['run', 'txn-one-revision', 'extra'], code: 2, stderr: ["etcdsim run: too many arguments for 'run'. Expected 1 argument but got 2."] },
  { args: ['run', 'txn-one-revision', '--seed', 'x'], code: 2, stderr: ['etcdsim run: --seed must be a non-negative integer, got "x"'] },
  { args: ['run', 'txn-one-revision', '--html'], code: 2, stderr: ["etcdsim run: option '--html <file>' argument missing"] },
  {
    args: ['run', 'txn-one-revision', '--html', '/nonexistent/dir/t.html'],
    code: 2,
    stderr: ['etcdsim run: cannot write the timeline to /nonexistent/dir/t.html: no such directory: /nonexistent/dir'],
    note: 'checked before the run',
  },
  { args: ['run', 'txn-one-revision', '--frobnicate'], code: 2, stderr: ["etcdsim run: unknown option '--frobnicate'"] },
  {
    args: ['run', `${FIX}/syntax-error.etcdsim`],
    code: 2,
    stderr: [
      'etcdsim run: syntax-error.etcdsim:3: get expects a key and an optional range end (usage: get KEY [RANGE_END] [--prefix] [--from-key] [--rev=N] [--limit=N] [--keys-only] [--print-value-only] [--consistency=l|s] [-w json])',
    ],
    transcript: true,
  },
  { args: ['run', `${FIX}/failed-expectation.etcdsim`], code: 1, stderr: ['etcdsim run: failed-expectation.etcdsim:3: expect revision == 9: got revision 2'], transcript: true },

  // ── diff ─────────────────────────────────────────────────────────────────────────────────────────
  { args: ['diff'], code: 2, stderr: ['etcdsim diff: give exactly one of --start-etcd and --endpoint HOST:PORT'] },
  { args: ['diff', '--start-etcd', '--endpoint', '127.0.0.1:1'], code: 2, stderr: ['etcdsim diff: give exactly one of --start-etcd and --endpoint HOST:PORT'] },
  { args: ['diff', '--start-etcd', '--ops', 'many'], code: 2, stderr: ['etcdsim diff: --ops must be an integer >= 1, got "many"'] },
  { args: ['diff', '--start-etcd', '--etcd-version', '3.3'], code: 2, stderr: ['etcdsim diff: --etcd-version must be 3.4, 3.5, 3.6 or 3.7, got "3.3"'] },
  { args: ['diff', '--endpoint', '127.0.0.1:1', '--etcd-bin', '/x'], code: 2, stderr: ['etcdsim diff: --etcd-bin goes with --start-etcd'] },
  { args: ['diff', '--frobnicate'], code: 2, stderr: ["etcdsim diff: unknown option '--frobnicate'"] },
  { args: ['diff', '--start-etcd', '--etcd-bin', '/nonexistent/etcd'], code: 2, stderr: ['etcdsim diff: could not start etcd: etcd binary not found at /nonexistent/etcd'] },
  {
    args: ['diff', '--endpoint', '10.1.2.3:2379'],
    code: 2,
    stderr: [
      'etcdsim diff: refusing 10.1.2.3:2379: not a loopback address. A diff deletes every key, revokes every lease and compacts the history (cluster-wide); point it only at a throwaway etcd. Pass --allow-non-loopback if you mean it.',
    ],
  },
  { args: ['diff', '--start-etcd', '--seeds', '5..1'], code: 2, stderr: ['etcdsim diff: --seeds: 5..1 is empty (A must be <= B)'] },
  { args: ['diff', '--start-etcd', '--seeds', '1..4', '--seed', '3'], code: 2, stderr: ['etcdsim diff: give either --seed N or --seeds A..B, not both'] },
  { args: ['diff', '--start-etcd', '--workers', '2'], code: 2, stderr: ['etcdsim diff: --workers goes with --seeds A..B'] },
  {
    args: ['diff', '--endpoint', '127.0.0.1:1', '--seeds', '1..4', '--workers', '2'],
    code: 2,
    stderr: [
      'etcdsim diff: --workers 2 needs 2 endpoints, got 1: each worker wipes its etcd between workloads, so give one HOST:PORT per worker (comma-separated) or use --start-etcd',
    ],
  },
];

/** Every command has --help: exit 0, the usage on stdout, nothing on stderr. */
const HELP: readonly (readonly string[])[] = [['--help'], ['help', 'serve'], ['demo', '--help'], ['serve', '--help'], ['run', '--help'], ['diff', '--help']];

// A port that is taken (the "address already in use" row).
const busy = createServer();
await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
const BUSY_PORT = String((busy.address() as { port: number }).port);
busy.unref();
const withPort = (s: string): string => s.replace(/BUSY_PORT/g, BUSY_PORT);

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Spawns `node bin/etcdsim.js ARGS`; for a starting serve, waits for the ready line, then sends SIGTERM. */
function etcdsim(args: readonly string[], starts = false): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/etcdsim.js', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let signalled = false;
    const guard = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`etcdsim ${args.join(' ')}: no result in 20 s; stdout ${JSON.stringify(stdout)} stderr ${JSON.stringify(stderr)}`));
    }, 20_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (starts && !signalled && /^etcdsim serving etcd v3 API on .*\n/m.test(stdout)) {
        signalled = true;
        child.kill('SIGTERM');
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Runs etcd 3.4.23 with a row's serve flags on loopback (throwaway data dir); for `starts`, until it serves. */
async function etcd(flags: readonly string[], starts: boolean): Promise<Ran> {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-cli-etcd-'));
  const [client, peer] = [await freePort(), await freePort()];
  const has = (f: string): boolean => flags.includes(f);
  // A row's own peer flags replace these (with etcd's defaults for the rest, as etcdsim's).
  const ownPeer = has('--initial-advertise-peer-urls') || has('--initial-cluster');
  const base = [
    '--data-dir', dir,
    '--listen-peer-urls', `http://127.0.0.1:${peer}`,
    ...(ownPeer ? [] : ['--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`, '--initial-cluster', `default=http://127.0.0.1:${peer}`]),
    ...(has('--listen-client-urls') ? [] : ['--listen-client-urls', `http://127.0.0.1:${client}`]),
    ...(has('--advertise-client-urls') ? [] : ['--advertise-client-urls', `http://127.0.0.1:${client}`]),
  ];
  // etcd rejects port 0 nowhere, but our rows listen on :0 only to start; give etcd its free port instead.
  const own = flags.map((f) => (f === 'http://127.0.0.1:0' && starts ? `http://127.0.0.1:${client}` : f));
  try {
    return await new Promise<Ran>((resolve, reject) => {
      const child = spawn('etcd', [...base, ...own], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      let signalled = false;
      const guard = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`etcd ${own.join(' ')}: still running after 10 s; stderr ${stderr.slice(-2000)}`));
      }, 10_000);
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        if (starts && !signalled && stderr.includes('ready to serve client requests')) {
          signalled = true;
          setTimeout(() => child.kill('SIGTERM'), 200);
        }
      });
      child.on('close', (code, signal) => {
        clearTimeout(guard);
        resolve({ code, signal, stdout, stderr });
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const label = (args: readonly string[]): string => `etcdsim ${args.map((a) => (a === '' ? "''" : a)).join(' ')}`;

describe('the CLI table of bad input: one test per row', { concurrency: availableParallelism() }, () => {
  for (const row of ROWS) {
    test(`${label(row.args)} → exit ${row.code}`, async () => {
      const r = await etcdsim(row.args.map(withPort), row.starts === true);
      const errLines = r.stderr === '' ? [] : r.stderr.replace(/\n$/, '').split('\n');
      assert.deepEqual(errLines, row.stderr.map(withPort), 'stderr');
      assert.equal(r.code, row.code, `exit code (stderr: ${r.stderr})`);
      if (row.starts === true) assert.match(r.stdout, /^etcdsim serving etcd v3 API on http:\/\/127\.0\.0\.1:\d+\n$/);
      else if (row.transcript === true) assert.match(r.stdout, /^# /m, 'the transcript on stdout');
      else assert.equal(r.stdout, '', 'nothing on stdout');
      assert.doesNotMatch(r.stderr, /^\s+at /m, 'no stack trace');
    });
  }
  for (const args of HELP) {
    test(`${label(args)} → exit 0, usage on stdout`, async () => {
      const r = await etcdsim(args);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, '');
      assert.match(r.stdout, /^Usage: etcdsim/m);
    });
  }
});

describe('etcd 3.4.23 does what the table says', { concurrency: availableParallelism(), skip: skipEtcd }, () => {
  for (const row of ROWS) {
    const e = row.etcd;
    if (e === undefined) continue;
    test(`etcd ${row.args.slice(1).map((a) => (a === '' ? "''" : a)).join(' ')}`, async () => {
      const starts = 'starts' in e;
      const r = await etcd(row.args.slice(1).map(withPort), starts);
      if ('starts' in e) {
        assert.equal(r.signal ?? r.code, 'SIGTERM', `etcd should have been serving until SIGTERM; stderr: ${r.stderr.slice(-1500)}`);
        if (e.text !== undefined) assert.ok(r.stderr.includes(e.text), `etcd logs ${JSON.stringify(e.text)}; stderr: ${r.stderr.slice(-1500)}`);
      } else {
        assert.equal(r.code, e.exits, `etcd's exit code; stderr: ${r.stderr.slice(-1500)}`);
        assert.ok(r.stderr.includes(withPort(e.text)), `etcd says ${JSON.stringify(e.text)}; stderr: ${r.stderr.slice(-1500)}`);
      }
    });
  }
});

// ── docs/cli-errors.md ──────────────────────────────────────────────────────────────────────────────

const DOC = 'docs/cli-errors.md';
const BEGIN = '<!-- table: generated from test/cli/errors.test.ts -->';
const END = '<!-- end of table -->';

function cell(s: string): string {
  return s.replace(/\|/g, '\\|');
}

function code(s: string): string {
  return s.includes('`') ? `\`\` ${s} \`\`` : `\`${s}\``;
}

function renderTable(): string {
  const lines = ['| command | exit | stderr (one line; nothing on stdout) | etcd 3.4.23 |', '|---|---|---|---|'];
  for (const r of ROWS) {
    const cmd = code(label(r.args));
    const err = r.starts === true ? (r.stderr.length === 0 ? 'starts, no warning' : `starts; warns ${code(r.stderr[0]!)}`) : code(r.stderr[0]!);
    const e = r.etcd;
    let etcdCell = '—';
    if (e !== undefined) etcdCell = 'starts' in e ? (e.text === undefined ? 'starts' : `starts; warns ${code(e.text)}`) : `exit ${e.exits}: ${code(e.text)}`;
    if (r.note !== undefined) etcdCell += ` (${r.note})`;
    if (r.transcript === true) etcdCell = '— (the transcript goes to stdout)';
    lines.push(`| ${cell(cmd)} | ${r.starts === true ? '0 on SIGTERM' : r.code} | ${cell(err)} | ${cell(etcdCell)} |`);
  }
  return lines.join('\n');
}

test(`${DOC} holds this table`, () => {
  const table = renderTable();
  const doc = readFileSync(DOC, 'utf8');
  const a = doc.indexOf(BEGIN);
  const b = doc.indexOf(END);
  assert.ok(a >= 0 && b > a, `${DOC} has the table markers`);
  const current = doc.slice(a + BEGIN.length, b).trim();
  if (current !== table && process.env['ETCDSIM_WRITE_DOCS'] === '1') {
    writeFileSync(DOC, `${doc.slice(0, a + BEGIN.length)}\n${table}\n${doc.slice(b)}`);
    return;
  }
  assert.equal(current, table, `${DOC} is out of date: ETCDSIM_WRITE_DOCS=1 node --import tsx --test test/cli/errors.test.ts`);
});

test('a reader that stops reading (etcdsim | head -1) ends the command quietly, without a stack trace', async () => {
  const child = spawn(process.execPath, ['bin/etcdsim.js', 'demo'], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.destroy(); // the read end closes before the first line: every write meets EPIPE
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(stderr, '');
  assert.equal(code, 0);
});
