/**
 * What a test needs from the machine, said once at the top of its file. The differential and etcdctl tests
 * compare with a real etcd 3.4.23 (`etcd`, `etcdctl`), the timeline test renders in headless Chromium, the
 * Go client test builds against etcd 3.4.23's Go sources (`go`, golang-etcd-server-dev); the rest of the
 * suite needs only Node. `.ci/run` installs all of them.
 *
 *   const skip = requireCommands(['etcd', 'etcdctl']);
 *   test('...', { skip }, async () => { ... });
 *
 * Outside CI a missing program skips those tests with a one-line reason (node:test prints it on each
 * skipped test), so a developer without etcd still runs everything else. In CI (CI=true) nothing is
 * skipped: a missing program throws here, when the file loads, and the run fails saying what to install.
 */
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { GO_CLIENTV3_DIR } from '../../src/diff/go_build.js';

/** Whether this is a CI run (.ci/run is started with CI=true). */
export const inCI = process.env['CI'] === 'true';

/** The Debian package that brings each program (what .ci/run installs). */
const DEBIAN_PACKAGES: Readonly<Record<string, string>> = {
  etcd: 'etcd-server',
  etcdctl: 'etcd-client',
  chromium: 'chromium',
  go: 'golang-go',
  openssl: 'openssl',
  unshare: 'util-linux',
  ip: 'iproute2',
};

/** The executable `name` resolves to on PATH, or undefined (looked up as a shell would, without one). */
export function findCommand(name: string): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here: the next PATH entry
    }
  }
  return undefined;
}

/**
 * node:test's `skip` option for tests that need every one of `names` on PATH: `false` when all are there;
 * outside CI, a one-line reason naming the missing ones and how to install them. In CI a missing program
 * throws (the file fails to load) instead of skipping.
 */
export function requireCommands(names: readonly string[]): string | false {
  const missing = names.filter((n) => findCommand(n) === undefined);
  if (missing.length === 0) return false;
  const packages = [...new Set(missing.map((n) => DEBIAN_PACKAGES[n] ?? n))].join(' ');
  const reason = `needs ${missing.join(', ')} on PATH (apt-get install -y ${packages}; .ci/run installs ${missing.length === 1 ? 'it' : 'them'})`;
  if (inCI) throw new Error(`CI=true: this test file ${reason}`);
  return reason;
}

/** requireCommands for one program. */
export function requireCommand(name: string): string | false {
  return requireCommands([name]);
}

/** The names headless Chromium goes by (Debian's package installs `chromium`). */
const CHROMIUM_NAMES = ['chromium', 'chromium-browser', 'google-chrome'] as const;

/** The Chromium executable on PATH, or undefined. */
export function findChromium(): string | undefined {
  for (const name of CHROMIUM_NAMES) {
    const found = findCommand(name);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** node:test's `skip` option for tests that render in headless Chromium (see requireCommands). */
export function requireChromium(): string | false {
  return findChromium() === undefined ? requireCommand('chromium') : false;
}

/**
 * node:test's `skip` option for tests that build a Go program against etcd 3.4.23's client sources
 * (GOPATH mode, offline): `false` when they are there; outside CI a one-line reason; in CI it throws, as
 * requireCommands does. Check `go` itself with requireCommands.
 */
export function requireGoEtcdSources(): string | false {
  if (existsSync(GO_CLIENTV3_DIR)) return false;
  const reason = `needs etcd 3.4's Go sources in ${GO_CLIENTV3_DIR} (apt-get install -y golang-etcd-server-dev; .ci/run installs it)`;
  if (inCI) throw new Error(`CI=true: this test file ${reason}`);
  return reason;
}
