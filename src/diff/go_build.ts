/**
 * Go programs built against etcd's own client: the differential tests and the served bench drive real etcd
 * and the simulator with clientv3 3.4.23, taken from Debian's golang-etcd-server-dev (etcd's Go sources and
 * their dependencies as a GOPATH root) and built offline in GOPATH mode — no module download, no network.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Where golang-etcd-server-dev puts etcd 3.4.23's Go sources: a GOPATH root. */
export const GO_ETCD_SOURCE_ROOT = '/usr/share/gocode';

/** etcd's Go client inside it: present once golang-etcd-server-dev is installed. */
export const GO_CLIENTV3_DIR = join(GO_ETCD_SOURCE_ROOT, 'src', 'go.etcd.io', 'etcd', 'clientv3');

/**
 * Builds the Go program `source` (one main package file) into `<cacheDir>/<name>`, unless the binary there is
 * at least as new as the source; resolves to the binary. GOPATH is a scratch folder under `cacheDir` followed
 * by Debian's source root, with modules and the proxy off and a build cache of its own (about a minute the
 * first time on two cores, seconds after that).
 */
export async function buildEtcdGoProgram(source: string, cacheDir: string, name: string): Promise<string> {
  const bin = join(cacheDir, name);
  if (existsSync(bin) && statSync(bin).mtimeMs >= statSync(source).mtimeMs) return bin;
  mkdirSync(join(cacheDir, 'gopath'), { recursive: true });
  const env = {
    ...process.env,
    GOPATH: `${join(cacheDir, 'gopath')}:${GO_ETCD_SOURCE_ROOT}`,
    GO111MODULE: 'off',
    GOPROXY: 'off',
    GOFLAGS: '',
    GOCACHE: join(cacheDir, 'gocache'),
  };
  await new Promise<void>((resolve, reject) => {
    execFile('go', ['build', '-o', bin, source], { env, cwd: cacheDir, maxBuffer: 16 << 20 }, (err, _out, stderr) => {
      if (err === null) resolve();
      else reject(new Error(`go build of ${source} failed:\n${stderr}`));
    });
  });
  return bin;
}
