// The `etcd` command started from a V8 start-up snapshot: etcd's e2e suite and the process tests start a
// member for every test, and a member's start was mostly JavaScript work that is the same in every process —
// evaluating the bundle's modules and building etcd's proto descriptors and request checks. This script is
// what `node --build-snapshot` runs (scripts/build.mjs writes dist/etcd.blob with it): it evaluates
// dist/etcd.cjs and its prepareMember() once, and names the function a started process runs instead of a
// script. bin/etcd_launch.sh starts `node --snapshot-blob dist/etcd.blob -- ARGV...` when the blob is there,
// was made by that very Node and dist/ is fresh; otherwise the code-cache path (bin/etcd_bundle.js) runs.
//
// What must not be captured in the snapshot, since it would be the builder's and not the started process's:
// a clock reading, the environment, a file descriptor, a listener or timer — prepareMember() makes none
// (src/cli/etcd/main.ts; src/sim/host_platform.ts reads the time origin when used). Node 20's builder
// cannot hold node:http, node:https, node:tls or node:http2 (it fails on them or warns that their state may
// not survive), so the bundle is given a stand-in for each that loads the real module at its first use,
// which is after the process started; a use while building fails the build instead. node:cluster and
// node:dns are loaded here, though nothing of ours imports them: every `listen` of node:net loads them
// (about 9 ms of CPU), and the one state node:cluster keeps for a process like ours — that it is not a
// cluster worker, read from NODE_UNIQUE_ID, which no harness sets for etcd — is the same in every process.
'use strict';
const { execFileSync } = require('node:child_process');
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const v8 = require('node:v8');

const bundle = join(__dirname, '..', 'dist', 'etcd.cjs');
const DEFERRED = ['http', 'https', 'tls', 'http2'];
require('node:cluster');
require('node:dns');
let building = true;

// A stand-in's own keys must be known without loading the module (the bundle copies them into its import
// records while it is evaluated): a plain Node process lists them.
const keysOf = JSON.parse(
  execFileSync(process.execPath, ['-e', `process.stdout.write(JSON.stringify(Object.fromEntries(${JSON.stringify(DEFERRED)}.map((m) => [m, Object.keys(require(m))]))))`], { encoding: 'utf8' }),
);

/** A module object whose every property is the real module's, loaded at the first read. */
function deferred(name) {
  let real;
  const load = () => {
    if (building) throw new Error(`etcdsim snapshot: node:${name} was used while the snapshot was built; it must only be used once a process runs`);
    return (real ??= require(name));
  };
  const keys = keysOf[name];
  return new Proxy(
    {},
    {
      get: (_, key) => load()[key],
      has: (_, key) => key in load(),
      ownKeys: () => keys,
      getOwnPropertyDescriptor: (_, key) => (keys.includes(key) ? { configurable: true, enumerable: true, get: () => load()[key] } : undefined),
    },
  );
}

const standIns = new Map();
function bundleRequire(id) {
  const name = id.startsWith('node:') ? id.slice(5) : id;
  if (!DEFERRED.includes(name)) return require(id);
  if (!standIns.has(name)) standIns.set(name, deferred(name));
  return standIns.get(name);
}

const module_ = { exports: {} };
// The bundle's own header reads its folder from __dirname (the .proto files beside it, read while building).
new Function('exports', 'require', 'module', '__filename', '__dirname', readFileSync(bundle, 'utf8'))(
  module_.exports,
  bundleRequire,
  module_,
  bundle,
  join(__dirname, '..', 'dist'),
);
const etcd = module_.exports;

let prepared = false;
etcd.prepareMember().then(
  () => {
    prepared = true;
  },
  (err) => {
    process.exitCode = 1;
    console.error(err);
  },
);

v8.startupSnapshot.setDeserializeMainFunction(() => {
  building = false;
  if (!prepared) throw new Error('etcdsim snapshot: built before prepareMember() finished');
  // No script in argv: `node --snapshot-blob BLOB -- ARGV...` gives [node, ...ARGV].
  etcd.runEtcdCommand(process.argv.slice(1)).then((code) => {
    process.exitCode = code;
  });
});
