/**
 * The do-nothing gRPC server of bench/h2_raw_floor_server.mjs (every call, whatever its path, answered with
 * :status 200 / application/grpc, one constant message and trailers grpc-status 0 / empty grpc-message once
 * the request side ends) — on src/grpc/h2, the library that grew out of that prototype. It checks that the
 * library keeps the prototype's cheapness: same answer, same load, CPU per call side by side.
 *
 *   node --import tsx bench/h2_lib_floor_server.ts compare [rounds]
 *       compiles this file (esbuild, bundled) so no tsx runs in the measured process, starts it and
 *       bench/h2_raw_floor_server.mjs, drives each in turn with bench/go/loadgen (64 clients on 8
 *       connections, puts of 256 B; the binary `npm run bench -- --only served` builds), and prints each
 *       server's CPU (utime + stime from /proc) per 1000 calls and its throughput, median over rounds.
 *   node <compiled> <port>  → prints "h2 lib floor server on 127.0.0.1:PORT" and serves.
 */
import * as net from 'node:net';
import { Http2ServerConnection } from '../src/grpc/h2/connection.js';
import { HpackEncoder } from '../src/grpc/h2/hpack.js';

// ResponseHeader{cluster_id: 1, member_id: 2, revision: 3, raft_term: 4} as field 1 (as the other floors).
const MESSAGE = Buffer.from('0a080801100218032004', 'hex');
const GRPC_FRAME = Buffer.concat([Buffer.from([0, 0, 0, 0, MESSAGE.length]), MESSAGE]);
const RESPONSE = HpackEncoder.constant([':status', '200', 'content-type', 'application/grpc']);
const TRAILERS = HpackEncoder.constant(['grpc-status', '0', 'grpc-message', '']);

/** Listens on 127.0.0.1:`port`; resolves with the server and its port. */
export function listen(port: number): Promise<{ server: net.Server; port: number; connections: Set<Http2ServerConnection> }> {
  const connections = new Set<Http2ServerConnection>();
  const server = net.createServer((socket) => {
    const c = new Http2ServerConnection(socket, {
      onStream: (st) => {
        st.onEnd = () => {
          st.respond(RESPONSE);
          st.write(GRPC_FRAME);
          st.end(TRAILERS);
        };
      },
      onClose: () => connections.delete(c),
    });
    connections.add(c);
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve({ server, port: (server.address() as net.AddressInfo).port, connections })));
}

async function serveMain(port: number): Promise<void> {
  const { server, port: p, connections } = await listen(port);
  process.stdout.write(`h2 lib floor server on 127.0.0.1:${p}\n`);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      for (const c of connections) c.close();
      server.close(() => process.exit(0));
      setTimeout(() => process.exit(0), 500).unref();
    });
  }
}

async function compareMain(rounds: number): Promise<void> {
  const { spawn } = await import('node:child_process');
  const { existsSync, readFileSync, mkdirSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { fileURLToPath } = await import('node:url');
  const root = fileURLToPath(new URL('../', import.meta.url));
  const loadgen = join(root, 'node_modules', '.cache', 'etcdsim-loadgen', 'loadgen');
  if (!existsSync(loadgen)) {
    process.stderr.write(`no ${loadgen}: run \`npm run bench -- --only served\` once to build bench/go/loadgen\n`);
    process.exit(1);
  }
  const outDir = join(root, 'node_modules', '.cache', 'etcdsim-h2lib');
  mkdirSync(outDir, { recursive: true });
  const compiled = join(outDir, 'h2_lib_floor_server.mjs');
  const esbuild = await import('esbuild');
  await esbuild.build({ entryPoints: [fileURLToPath(import.meta.url)], bundle: true, outfile: compiled, format: 'esm', platform: 'node', target: 'node20', logLevel: 'silent', external: ['esbuild'] });

  const cpuNs = (pid: number): number => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1e9) / 100;
  };
  const start = (script: string, ready: RegExp): Promise<{ pid: number; address: string; stop: () => void }> =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [script, '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = ready.exec(out);
        const port = /127\.0\.0\.1:(\d+)/.exec(out);
        if (m !== null && port !== null) resolve({ pid: child.pid!, address: `127.0.0.1:${port[1]}`, stop: () => void child.kill('SIGKILL') });
      });
      child.once('error', reject);
    });
  const servers = [
    { name: 'raw floor (bench/h2_raw_floor_server.mjs)', ...(await start(join(root, 'bench', 'h2_raw_floor_server.mjs'), /h2 raw floor server on /)) },
    { name: 'library floor (src/grpc/h2)', ...(await start(compiled, /h2 lib floor server on /)) },
  ];
  const run = (address: string, pid: number): Promise<{ cpu: number; ops: number }> =>
    new Promise((resolve, reject) => {
      const args = ['-endpoints', address, '-op', 'put', '-clients', '64', '-conns', '8', '-total', '30000', '-warmup', '3000', '-value-size', '256'];
      const child = spawn(loadgen, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      let cpu0: number | undefined;
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => {
        err += d.toString();
        if (cpu0 === undefined && err.includes('timed run starts')) cpu0 = cpuNs(pid);
      });
      child.once('exit', (code) => {
        const cpu1 = cpuNs(pid);
        if (code !== 0 || cpu0 === undefined) return reject(new Error(`loadgen exited ${code}: ${err.slice(-800)}`));
        const res = JSON.parse(out.trim().split('\n').pop()!) as { requests: number; errors: number; opsPerSec: number };
        if (res.errors > 0) return reject(new Error(`loadgen: ${res.errors} errors`));
        resolve({ cpu: (cpu1 - cpu0) / res.requests, ops: res.opsPerSec });
      });
    });
  const figures = new Map<string, { cpu: number[]; ops: number[] }>(servers.map((s) => [s.name, { cpu: [], ops: [] }]));
  try {
    for (let r = 0; r < rounds; r++) {
      for (const s of r % 2 === 0 ? servers : [...servers].reverse()) {
        const { cpu, ops } = await run(s.address, s.pid);
        figures.get(s.name)!.cpu.push(cpu / 1e3);
        figures.get(s.name)!.ops.push(ops);
        process.stdout.write(`round ${r + 1}: ${s.name}: ${(cpu / 1e3).toFixed(1)} ms CPU per 1000 puts, ${Math.round(ops)}/s\n`);
      }
    }
  } finally {
    for (const s of servers) s.stop();
  }
  const median = (xs: number[]): number => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  for (const [name, f] of figures) {
    process.stdout.write(`${name}: median ${median(f.cpu).toFixed(1)} ms CPU per 1000 puts (rounds ${f.cpu.map((x) => x.toFixed(1)).join(', ')}), ${Math.round(median(f.ops))}/s\n`);
  }
}

if (process.argv[2] === 'compare') await compareMain(Number(process.argv[3] ?? '5'));
else if (process.argv[1] !== undefined && /h2_lib_floor_server\.(ts|mjs|js)$/.test(process.argv[1])) await serveMain(Number(process.argv[2] ?? '0'));
