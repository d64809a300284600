/**
 * The package as a user gets it: `npm pack`, installed into a fresh consumer project, used through its
 * entry points only. This catches what the repository's own tests cannot: a file missing from the
 * tarball ("files" in package.json), an undeclared runtime dependency, an exports map that hides what
 * the README imports, types that do not resolve for a consumer, a bin that needs src/ or tsx.
 *
 * Offline: the consumer's lockfile is the runtime part of the repository's own (every package `npm ci`
 * put in npm's cache, none of the dev ones) plus the tarball, so `npm ci --offline` installs exactly the
 * versions this repository tests with, from the cache. (`npm install --offline` cannot: it needs registry
 * metadata, which `npm ci` does not cache.)
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

interface PackResult {
  readonly filename: string;
  readonly files: ReadonlyArray<{ readonly path: string }>;
}
interface LockEntry {
  readonly version?: string;
  readonly resolved?: string;
  readonly dev?: boolean;
  readonly devOptional?: boolean;
  readonly link?: boolean;
  readonly [field: string]: unknown;
}
interface Lockfile {
  readonly packages: Readonly<Record<string, LockEntry>>;
}
interface PackageJson {
  readonly name: string;
  readonly version: string;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly [field: string]: unknown;
}

/** The newest modification time under `dir`. */
function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

/**
 * The folder to pack: this checkout when its dist/ is what `npm pack` leaves (its prepack script, a build with
 * type declarations, no older than src/); otherwise a copy of the package's sources built there. Never this
 * checkout's dist/ rebuilt in place: the build starts by removing dist/, and other test files running beside
 * this one (`--test-concurrency`) start the etcdsim command and load dist/ meanwhile.
 */
async function packageDir(): Promise<string> {
  const stamp = join(root, 'dist', '.build-stamp');
  if (existsSync(stamp) && statSync(stamp).mtimeMs >= newest(join(root, 'src')) && existsSync(join(root, 'dist', 'index.d.ts'))) return root;
  const copy = mkdtempSync(join(tmpdir(), 'etcdsim-pack-src-'));
  for (const part of ['src', 'scripts', 'bin', 'scenarios', 'package.json', 'package-lock.json', 'README.md', 'LICENSE', 'tsconfig.json', 'tsconfig.build.json']) {
    if (existsSync(join(root, part))) cpSync(join(root, part), join(copy, part), { recursive: true });
  }
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'), 'dir');
  await run(process.execPath, ['scripts/build.mjs'], { cwd: copy });
  return copy;
}

/** The consumer's lockfile: the tarball plus the repository's runtime (non-dev) packages, layout unchanged. */
async function consumerLock(pkg: PackageJson, tarball: string, consumer: PackageJson): Promise<object> {
  const repoLock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as Lockfile;
  const registry = (await run(npm, ['config', 'get', 'registry'], { cwd: root })).stdout.trim().replace(/\/$/, '');
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  const rootEntry = repoLock.packages[''] ?? {};
  const packages: Record<string, unknown> = {
    '': { name: consumer.name, version: consumer.version, dependencies: consumer.dependencies },
    'node_modules/etcdsim': {
      ...Object.fromEntries(['license', 'dependencies', 'bin', 'engines', 'peerDependencies', 'peerDependenciesMeta'].map((k) => [k, rootEntry[k]])),
      version: pkg.version,
      resolved: `file:${tarball}`,
      integrity,
    },
  };
  for (const [path, entry] of Object.entries(repoLock.packages)) {
    if (!path.startsWith('node_modules/') || entry.dev === true || entry.devOptional === true || entry.link === true) continue;
    // Lockfiles here omit `resolved` (omit-lockfile-registry-resolved); the tarball URL is where npm cached it.
    const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
    const resolved = entry.resolved ?? `${registry}/${name}/-/${name.split('/').pop()!}-${entry.version!}.tgz`;
    packages[path] = { ...entry, resolved };
  }
  return { name: consumer.name, version: consumer.version, lockfileVersion: 3, requires: true, packages };
}

/** The consumer's program: the README's in-process use, then server mode over gRPC. */
const CONSUMER_SCRIPT = `
import assert from 'node:assert/strict';
import { createEtcdSim, utf8, text, EtcdError, ErrCompacted, isEtcdError } from 'etcdsim';
import { serve, etcdService } from 'etcdsim/grpc';
import * as grpc from '@grpc/grpc-js';

const sim = createEtcdSim({ time: 'virtual', seed: 1 });
const { revision } = sim.mvcc.put({ key: utf8('/svc/a'), value: utf8('up') });
sim.mvcc.put({ key: utf8('/svc/a'), value: utf8('down') });
assert.equal(text(sim.mvcc.range({ key: utf8('/svc/a') }).kvs[0].value), 'down');
assert.equal(text(sim.mvcc.range({ key: utf8('/svc/a'), revision }).kvs[0].value), 'up');
const c = sim.client();
await c.kv.put({ key: '/svc/b', value: 'raw' });
assert.equal((await c.kv.range({ key: '/svc/b' })).kvs[0].value.toString(), 'raw');
sim.compact(3);
assert.throws(() => sim.mvcc.range({ key: utf8('/svc/a'), revision }), (e) => e instanceof EtcdError && isEtcdError(e, ErrCompacted));
sim.close();

const handle = await serve({ port: 0 });
const KV = etcdService('KV');
const kv = new KV(handle.address, grpc.credentials.createInsecure());
const call = (method, req) => new Promise((resolve, reject) => kv[method](req, (err, res) => (err ? reject(err) : resolve(res))));
const put = await call('Put', { key: Buffer.from('/wire'), value: Buffer.from('v1') });
const range = await call('Range', { key: Buffer.from('/wire') });
assert.equal(range.kvs.length, 1);
assert.equal(range.kvs[0].value.toString(), 'v1');
assert.equal(range.header.revision, put.header.revision);
kv.close();
await handle.close();

// Only the entry points are importable.
await assert.rejects(import('etcdsim/dist/server/delivery.js'), { code: 'ERR_PACKAGE_PATH_NOT_EXPORTED' });
console.log('consumer ok');
`;

/** The same use, typed: the exports map's types resolve for a TypeScript consumer (nodenext). */
const CONSUMER_TYPES = `
import { createEtcdSim, utf8, text, MvccStore, checkWatch, type EtcdSim, type AuthSetup, type KeyValue, type WatchResponse } from 'etcdsim';
import { serve, type ServeHandle, type ServeOptions } from 'etcdsim/grpc';

const auth: AuthSetup = { users: [{ name: 'root', password: 'pw', roles: ['root'] }], enable: true };
const sim: EtcdSim = createEtcdSim({ time: 'virtual', auth });
const kvs: KeyValue[] = sim.mvcc.range({ key: utf8('/a') }).kvs;
const value: string | undefined = kvs[0] === undefined ? undefined : text(kvs[0].value);
const responses: WatchResponse[] = sim.watchStream().take();
const store = new MvccStore();
const opts: ServeOptions = { port: 0 };
const started: Promise<ServeHandle> = serve(opts);
export { value, responses, store, started, checkWatch };
`;

describe('the packed package, installed into a fresh project', () => {
  let work = '';
  let pack: PackResult | undefined;
  let consumerDir = '';

  let built = root;

  before(async () => {
    built = await packageDir();
    work = mkdtempSync(join(tmpdir(), 'etcdsim-pack-'));
    const out = await run(npm, ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: built });
    pack = (JSON.parse(out.stdout) as PackResult[])[0];
  });
  after(() => {
    if (work !== '') rmSync(work, { recursive: true, force: true });
    if (built !== root) rmSync(built, { recursive: true, force: true });
  });

  test('the tarball holds dist/ (with the .proto files), bin/, scenarios/, the README and LICENSE, nothing else', () => {
    assert.ok(pack !== undefined);
    const files = pack.files.map((f) => f.path).sort();
    for (const needed of [
      'package.json',
      'README.md',
      'bin/etcdsim.js',
      'dist/index.js',
      'dist/index.d.ts',
      'dist/grpc.js',
      'dist/grpc.d.ts',
      'dist/proto/etcdserverpb/rpc.proto',
      'dist/proto/mvccpb/kv.proto',
      'dist/proto/authpb/auth.proto',
      'dist/cli/main.js',
      'scenarios/watch-from-the-past.etcdsim',
    ]) {
      assert.ok(files.includes(needed), `${needed} is missing from the tarball`);
    }
    const stray = files.filter((f) => !/^(dist|bin|scenarios)\//.test(f) && !['package.json', 'README.md', 'LICENSE'].includes(f));
    assert.deepEqual(stray, [], 'files outside dist/, bin/, scenarios/');
    const maps = files.filter((f) => f.endsWith('.map') || f.endsWith('.build-stamp') || f.endsWith('.blob'));
    assert.deepEqual(maps, [], 'source maps (their sources are not shipped), the build stamp and the start-up snapshot (only the Node that built it starts from it) stay out');
  });

  test('installs offline, and a consumer uses etcdsim and etcdsim/grpc', async () => {
    assert.ok(pack !== undefined);
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as PackageJson;
    const tarball = join(work, pack.filename);
    consumerDir = join(work, 'consumer');
    mkdirSync(consumerDir);
    const consumer: PackageJson = { name: 'etcdsim-consumer', version: '1.0.0', dependencies: { etcdsim: `file:${tarball}` } };
    writeFileSync(join(consumerDir, 'package.json'), JSON.stringify({ ...consumer, private: true, type: 'module' }, null, 2));
    writeFileSync(join(consumerDir, 'package-lock.json'), JSON.stringify(await consumerLock(pkg, tarball, consumer), null, 2));
    await run(npm, ['ci', '--offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: consumerDir });
    assert.ok(!existsSync(join(consumerDir, 'node_modules', 'etcdsim', 'src')), 'src/ is not shipped');

    writeFileSync(join(consumerDir, 'use.mjs'), CONSUMER_SCRIPT);
    const used = await run(process.execPath, ['use.mjs'], { cwd: consumerDir });
    assert.match(used.stdout, /consumer ok/);
  });

  test("the consumer's TypeScript resolves the entry points' types", async () => {
    assert.ok(consumerDir !== '', 'needs the installed consumer of the test before');
    writeFileSync(join(consumerDir, 'use.ts'), CONSUMER_TYPES);
    writeFileSync(
      join(consumerDir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, noEmit: true, skipLibCheck: true, types: [] },
        files: ['use.ts'],
      }),
    );
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const checked = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: consumerDir }).catch((e: { stdout?: string }) => e);
    assert.equal('code' in checked ? checked.code : 0, 0, `tsc on the consumer:\n${checked.stdout ?? ''}`);
  });

  test('the installed bin runs from dist/ alone (no src/, no tsx) and finds its bundled scenarios', async () => {
    assert.ok(consumerDir !== '', 'needs the installed consumer of the test before');
    const bin = join(consumerDir, 'node_modules', '.bin', 'etcdsim');
    const listed = await run(bin, ['run', '--list'], { cwd: consumerDir });
    assert.match(listed.stdout, /watch-from-the-past/);
    const ran = await run(bin, ['run', 'watch-from-the-past'], { cwd: consumerDir });
    assert.ok(ran.stdout.length > 0);
  });
});
