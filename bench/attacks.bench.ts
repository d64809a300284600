/**
 * The client port under attack (issue 32), etcd 3.4.23 and `etcdsim serve` side by side: each attack runs
 * against a fresh server process on loopback for a bounded time and count, while an innocent client on its
 * own HTTP/2 connection makes a gRPC Put and a Range every 200 ms. Per attack and server: peak resident set
 * (VmHWM), CPU seconds spent during the attack (/proc/<pid>/stat), the innocent client's median and
 * maximum latency, and what the attacker saw (GOAWAY code, resets, HTTP status, connections closed). The
 * attacks on many connections, and the SETTINGS flood (Node's read buffers), also run against Node's
 * floor (bench/socket_floor_server.mjs: a bare net or node:http server taking the same input) and Go's
 * (bench/go/socket_floor: the same in Go, built offline when Go is installed): a row's "over the floor"
 * holds etcdsim less Node's floor against etcd less Go's, so what is the runtime's and what is the server's
 * own are told apart with data.
 *
 * What an attack added is measured in the same process: before the attack, the server serves the innocent
 * client alone for as long as the attack will last, and the attack's CPU less that window's is what the
 * attack added — the process's upkeep, its innocent calls and its code compiled on first use (a fresh Node
 * process spends more than Go on the last) subtracted the same way for both servers. Before issue 32's fifth
 * pass the rows were held against each server's no-attack row, a different process: the rows whose attack
 * ends at once (GOAWAY, 400) then measured that row's upkeep and cold code, not the attack. The peak's
 * growth is likewise over the resident set after that window. The CPU target holds the added CPU to etcd's,
 * each counted as at least NOISE_S, since at that size two identical windows differ by as much.
 *
 * The issue's goal per row: the server stays up, peak memory ≤ etcd's, CPU ≤ etcd's, and the innocent
 * median within 2× its median with no attack (the first rows). `npm run bench -- --only attacks` runs it;
 * docs/security.md records a run. Loopback only; every attack stops at its duration or count.
 */
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { readFileSync } from 'node:fs';
import { CLIENT_PREFACE, ErrorCode, Flags, FrameType, SETTINGS_ACK, frame, parseFrames, settingsFrame } from '../src/h2/frames.js';
import { HpackEncoder } from '../src/h2/hpack.js';
import type { BenchContext, BenchSection, Row } from './harness.js';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, hasBinary, spawnUntil } from './server.bench.js';
import { compileSim, cpuNs, servedChild, startEtcd, startSim, type Served } from './served.bench.js';
import { buildEtcdGoProgram } from '../src/diff/go_build.js';

interface Sizes {
  /** Seconds each attack runs (at most). */
  readonly seconds: number;
  /** Connections of the many-connection attacks (half-open, slowloris), and watch streams of the slow reader. */
  readonly conns: number;
  readonly watchers: number;
  /**
   * The slow-read attacker's 64 KiB puts: a fixed count, so that both servers store the same data (a server
   * that answers puts faster would otherwise take more of them in the same seconds, and hold more).
   */
  readonly puts: number;
}
const FULL: Sizes = { seconds: 10, conns: 2000, watchers: 200, puts: 5000 };
const QUICK: Sizes = { seconds: 3, conns: 500, watchers: 50, puts: 1000 };

const ERROR_NAMES = Object.fromEntries(Object.entries(ErrorCode).map(([k, v]) => [v, k])) as Record<number, string>;

/** What an attacker saw: GOAWAY codes, RST_STREAMs, HTTP statuses, connections the server closed. */
class Seen {
  goaways = new Map<number, number>();
  resets = 0;
  statuses = new Map<string, number>();
  closed = 0;
  /** Octets of the attack the server's side took (the kernel's buffers included), where an attack counts them. */
  taken = 0;
  /** The 64 KiB puts the server answered (the slow-read rows). */
  puts = 0;
  text(): string {
    const parts: string[] = [];
    if (this.puts > 0) parts.push(`${this.puts} puts answered`);
    if (this.taken > 0) parts.push(`${(this.taken / 1048576).toFixed(1)} MB taken`);
    for (const [c, n] of this.goaways) parts.push(`GOAWAY ${ERROR_NAMES[c] ?? c}${n > 1 ? ` ×${n}` : ''}`);
    if (this.resets > 0) parts.push(`${this.resets} RST_STREAM`);
    for (const [s, n] of this.statuses) parts.push(`HTTP ${s}${n > 1 ? ` ×${n}` : ''}`);
    if (this.closed > 0) parts.push(`${this.closed} closed`);
    return parts.length === 0 ? 'nothing' : parts.join(', ');
  }
}

/** A raw attacker connection: reads (and counts) the server's frames unless `read` is false. */
async function rawConn(address: string, seen: Seen, read = true): Promise<net.Socket> {
  const [host, port] = address.split(':') as [string, string];
  const s = net.connect(Number(port), host);
  await new Promise<void>((resolve, reject) => {
    s.once('connect', resolve);
    s.once('error', reject);
  });
  s.on('error', () => {});
  s.on('close', () => {
    if (!dropped.has(s)) seen.closed++;
  });
  let rest = Buffer.alloc(0);
  if (read)
    s.on('data', (d: Buffer) => {
      const { frames, rest: r } = parseFrames(rest.length === 0 ? d : Buffer.concat([rest, d]));
      rest = Buffer.from(r);
      for (const f of frames) {
        if (f.type === FrameType.GOAWAY) seen.goaways.set(f.payload.readUInt32BE(4), (seen.goaways.get(f.payload.readUInt32BE(4)) ?? 0) + 1);
        else if (f.type === FrameType.RST_STREAM) seen.resets++;
        else if (f.type === FrameType.SETTINGS && (f.flags & Flags.ACK) === 0) s.write(SETTINGS_ACK);
      }
    });
  else s.pause();
  return s;
}

/** Sockets the attacker closed itself (not counted as closed by the server). */
const dropped = new WeakSet<net.Socket>();
function drop(s: net.Socket): void {
  dropped.add(s);
  s.destroy();
}

/** Writes `next()` as fast as the socket takes it, until the deadline, the count or the socket's end. */
async function flood(s: net.Socket, next: () => Buffer, deadline: number, count = Infinity): Promise<void> {
  let n = 0;
  // s.writable, not !s.destroyed: once the socket is ended, write() returns an error object — truthy, so the
  // loop would never wait again and would hold this process (and the innocent client in it) until the deadline.
  while (Date.now() < deadline && n < count && s.writable) {
    n++;
    if (!s.write(next())) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, Math.max(0, deadline - Date.now()));
        function done(): void {
          clearTimeout(t);
          s.off('drain', done);
          s.off('close', done);
          resolve();
        }
        s.once('drain', done);
        s.once('close', done);
      });
    }
  }
}

const until = (deadline: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())));
const grpcMessage = (hex: string): Buffer => {
  const m = Buffer.from(hex, 'hex');
  const b = Buffer.alloc(5 + m.length);
  b.writeUInt32BE(m.length, 1);
  m.copy(b, 5);
  return b;
};
const PREFACE = Buffer.concat([CLIENT_PREFACE, settingsFrame([])]);
const RANGE_HEADERS = new HpackEncoder().encode([':method', 'POST', ':scheme', 'http', ':path', '/etcdserverpb.KV/Range', ':authority', 'x', 'content-type', 'application/grpc', 'te', 'trailers']);
const NOT_GRPC = new HpackEncoder().encode([':method', 'POST', ':scheme', 'http', ':path', '/x', ':authority', 'x', 'content-type', 'text/plain']);
const WATCH_HEADERS = new HpackEncoder().encode([':method', 'POST', ':scheme', 'http', ':path', '/etcdserverpb.Watch/Watch', ':authority', 'x', 'content-type', 'application/grpc', 'te', 'trailers']);

type Attack = (address: string, seen: Seen, sz: Sizes, deadline: number) => Promise<void>;

/** The slow-read attacker's writer: `count` 64 KiB values put under /big one after another, on one connection (or until the deadline). */
async function bigPuts(address: string, seen: Seen, count: number, deadline: number): Promise<void> {
  const writer = http2.connect(`http://${address}`);
  writer.on('error', () => {});
  const value = Buffer.alloc(64 * 1024, 0x76);
  const put = Buffer.concat([Buffer.from([0x0a, 0x04]), Buffer.from('/big'), Buffer.from([0x12, 0x80, 0x80, 0x04]), value]);
  const message = Buffer.alloc(5 + put.length);
  message.writeUInt32BE(put.length, 1);
  put.copy(message, 5);
  while (seen.puts < count && Date.now() < deadline) {
    await new Promise<void>((resolve) => {
      const req = writer.request({ ':method': 'POST', ':path': '/etcdserverpb.KV/Put', 'content-type': 'application/grpc', te: 'trailers' });
      req.on('error', () => resolve());
      req.on('response', (headers) => {
        if (headers['grpc-status'] === '0') seen.puts++;
      });
      req.on('trailers', (trailers) => {
        if (trailers['grpc-status'] === '0') seen.puts++;
      });
      req.on('close', () => resolve());
      req.resume();
      req.end(message);
    });
  }
  writer.destroy();
}

/** An HPACK literal with incremental indexing (RFC 7541 §6.2.1), new name; lengths under 2^14. */
function indexedLiteral(name: string, valueLength: number): Buffer {
  const len = (n: number): number[] => (n < 127 ? [n] : n < 127 + 128 * 128 ? [127, ((n - 127) & 0x7f) | 0x80, (n - 127) >> 7] : []);
  return Buffer.concat([Buffer.from([0x40, ...len(name.length)]), Buffer.from(name), Buffer.from(len(valueLength)), Buffer.alloc(valueLength, 0x61)]);
}

/**
 * A runtime's floor for an attack (bench/socket_floor_server.mjs for Node, bench/go/socket_floor for Go): a
 * bare `net` server, the runtime's HTTP/1.1 server as the client port configures it, or a bare server
 * answering SETTINGS with their ACKs under the 50-reply throttle — the same input with no etcd on it.
 */
type Floor = 'net' | 'http' | 'settings';
const FLOOR_NAMES: Record<Floor, readonly [node: string, go: string]> = {
  net: ['bare net server', 'bare net.Listener'],
  http: ['bare node:http server', 'bare net/http server'],
  settings: ['bare net server, SETTINGS ACKs throttled at 50', 'bare net.Listener, SETTINGS ACKs throttled at 50'],
};

const ATTACKS: ReadonlyArray<{ name: string; run: Attack; floor?: Floor }> = [
  { name: 'no attack', run: async (_a, _s, _z, deadline) => until(deadline) },
  {
    name: 'empty CONTINUATION flood',
    run: async (address, seen, _z, deadline) => {
      const s = await rawConn(address, seen);
      s.write(Buffer.concat([PREFACE, frame(FrameType.HEADERS, 0, 1, Buffer.alloc(0))]));
      const batch = Buffer.concat(Array.from({ length: 4096 }, () => frame(FrameType.CONTINUATION, 0, 1, Buffer.alloc(0))));
      await flood(s, () => batch, deadline);
      drop(s);
    },
  },
  {
    name: 'server-reset streams, replies unread',
    run: async (address, seen, _z, deadline) => {
      const s = await rawConn(address, seen, false);
      s.write(PREFACE);
      let id = 1;
      const next = (): Buffer => {
        const parts: Buffer[] = [];
        for (let i = 0; i < 256 && id < 0x7fffffff; i++, id += 2) parts.push(frame(FrameType.HEADERS, Flags.END_HEADERS | Flags.END_STREAM, id, NOT_GRPC));
        return Buffer.concat(parts);
      };
      await flood(s, next, deadline, 2000);
      drop(s);
    },
  },
  {
    name: 'SETTINGS flood, replies unread',
    floor: 'settings',
    run: async (address, seen, _z, deadline) => {
      const s = await rawConn(address, seen, false);
      s.write(PREFACE);
      const batch = Buffer.concat(Array.from({ length: 4096 }, () => settingsFrame([[0x4, 65535]])));
      await flood(s, () => batch, deadline);
      // What the server read is what the kernel took: its growth is mostly Node's buffers for these reads.
      seen.taken = s.bytesWritten - s.writableLength;
      drop(s);
    },
  },
  {
    name: 'PING flood',
    run: async (address, seen, _z, deadline) => {
      const s = await rawConn(address, seen);
      s.write(PREFACE);
      const batch = Buffer.concat(Array.from({ length: 4096 }, () => frame(FrameType.PING, 0, 0, Buffer.alloc(8))));
      await flood(s, () => batch, deadline);
      drop(s);
    },
  },
  {
    name: 'rapid reset',
    run: async (address, seen, _z, deadline) => {
      const s = await rawConn(address, seen);
      s.write(PREFACE);
      let id = 1;
      const body = frame(FrameType.DATA, Flags.END_STREAM, 0, grpcMessage('0a0161'));
      const next = (): Buffer => {
        const parts: Buffer[] = [];
        for (let i = 0; i < 128 && id < 0x7fffffff; i++, id += 2) {
          body.writeUInt32BE(id, 5);
          parts.push(frame(FrameType.HEADERS, Flags.END_HEADERS, id, RANGE_HEADERS), Buffer.from(body), frame(FrameType.RST_STREAM, 0, id, Buffer.from([0, 0, 0, 8])));
        }
        return Buffer.concat(parts);
      };
      await flood(s, next, deadline);
      drop(s);
    },
  },
  {
    name: 'HPACK bomb',
    run: async (address, seen, _z, deadline) => {
      const s = await rawConn(address, seen);
      s.write(PREFACE);
      // One 4 KiB field in the dynamic table, then header blocks of 12,000 references to it (48 MB decoded each).
      s.write(frame(FrameType.HEADERS, Flags.END_HEADERS | Flags.END_STREAM, 1, Buffer.concat([Buffer.from([0x83, 0x86]), indexedLiteral('x-bomb', 4000)])));
      const refs = Buffer.concat([Buffer.from([0x83, 0x86]), Buffer.alloc(12_000, 0xbe)]);
      let id = 3;
      const next = (): Buffer => {
        const f = frame(FrameType.HEADERS, Flags.END_HEADERS | Flags.END_STREAM, id, refs);
        id += 2;
        return f;
      };
      await flood(s, next, deadline);
      drop(s);
    },
  },
  {
    name: 'half-open connections (half a preface)',
    floor: 'net',
    run: async (address, seen, sz, deadline) => {
      const conns: net.Socket[] = [];
      for (let i = 0; i < sz.conns && Date.now() < deadline; i++) {
        const s = await rawConn(address, seen, false);
        s.write(CLIENT_PREFACE.subarray(0, 12));
        conns.push(s);
      }
      await until(deadline);
      for (const s of conns) drop(s);
    },
  },
  {
    name: 'slowloris (HTTP/1.1 headers a byte at a time)',
    floor: 'http',
    run: async (address, seen, sz, deadline) => {
      const conns: net.Socket[] = [];
      for (let i = 0; i < sz.conns && Date.now() < deadline; i++) {
        const s = await rawConn(address, seen, false);
        s.write('GET /version HTTP/1.1\r\nHost: x\r\nX-a: ');
        conns.push(s);
      }
      while (Date.now() < deadline) {
        for (const s of conns) if (!s.destroyed) s.write('a');
        await until(Math.min(deadline, Date.now() + 1000));
      }
      for (const s of conns) drop(s);
    },
  },
  {
    name: 'slow-read watch streams',
    run: async (address, seen, sz, deadline) => {
      // Watchers on /big that never read; the attacker itself puts 64 KiB values there, so every put fans out.
      const conns: net.Socket[] = [];
      const create = grpcMessage('0a0c0a042f6269671204 2f626968'.replace(/ /g, ''));
      for (let c = 0; c < 10; c++) {
        const s = await rawConn(address, seen, false);
        const parts = [PREFACE, frame(FrameType.WINDOW_UPDATE, 0, 0, Buffer.from([0x7f, 0xff, 0x00, 0x00]))];
        for (let i = 0; i < sz.watchers / 10; i++) parts.push(frame(FrameType.HEADERS, Flags.END_HEADERS, 2 * i + 1, WATCH_HEADERS), frame(FrameType.DATA, 0, 2 * i + 1, create));
        s.write(Buffer.concat(parts));
        conns.push(s);
      }
      await bigPuts(address, seen, sz.puts, deadline);
      for (const s of conns) drop(s);
    },
  },
  {
    // The slow-read row's puts alone: what its readers add is the difference between the two rows.
    name: '64 KiB puts, no watchers (the slow-read row without its readers)',
    run: (address, seen, sz, deadline) => bigPuts(address, seen, sz.puts, deadline),
  },
  {
    name: 'HTTP/1.1 200 MiB POST to the gateway',
    run: async (address, seen, _z, deadline) => {
      const s = await rawConn(address, seen, false);
      let head = '';
      s.on('data', (d: Buffer) => {
        head += d.toString('latin1');
        const m = /^HTTP\/1\.1 (\d+)/.exec(head);
        if (m !== null && !seen.statuses.has(m[1]!)) seen.statuses.set(m[1]!, 1);
      });
      s.resume();
      const n = 200 * 1024 * 1024;
      s.write(`POST /v3/kv/put HTTP/1.1\r\nHost: x\r\nContent-Length: ${n}\r\n\r\n`);
      const chunk = Buffer.alloc(1 << 20, 0x41);
      await flood(s, () => chunk, deadline, n / chunk.length);
      await until(Math.min(deadline, Date.now() + 1000));
      drop(s);
    },
  },
];

/** The innocent client: a gRPC Put and a Range every 200 ms on its own connection; each call's latency in ms. */
async function innocent(address: string, deadline: number): Promise<number[]> {
  const session = http2.connect(`http://${address}`);
  session.on('error', () => {});
  const call = (path: string, message: Buffer): Promise<number> =>
    new Promise((resolve) => {
      const t0 = performance.now();
      const done = (): void => resolve(performance.now() - t0);
      try {
        const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
        req.on('error', done);
        req.on('close', done);
        req.resume();
        req.end(message);
      } catch {
        resolve(Infinity);
      }
    });
  const put = grpcMessage('0a01611201' + '62');
  const range = grpcMessage('0a0161');
  const out: number[] = [];
  while (Date.now() < deadline) {
    const next = Date.now() + 200;
    out.push(await call('/etcdserverpb.KV/Put', put));
    out.push(await call('/etcdserverpb.KV/Range', range));
    await until(next);
  }
  session.destroy();
  return out;
}

function vmHwm(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'));
  return m === null ? NaN : Number(m[1]) * 1024;
}
const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[s.length >> 1]!;
};

interface Outcome {
  /** VmHWM, and its growth over the high-water mark before the attack (after the innocent client's window). */
  readonly peak: number;
  readonly growth: number;
  readonly cpuS: number;
  /** cpuS less the CPU of the innocent client's window before it (NaN for a floor, which has none). */
  readonly addedS: number;
  /** The innocent client's median latency in that window (NaN for a floor). */
  readonly warmP50: number;
  readonly p50: number;
  readonly max: number;
  readonly seen: string;
  /** The attacker's 64 KiB puts the server answered (0 but for the slow-read rows). */
  readonly puts: number;
  readonly up: boolean;
}

const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));

/** Starts Node's floor of `kind` (bench/socket_floor_server.mjs), or Go's (`goFloor`, the built bench/go/socket_floor). */
async function startSocketFloor(kind: Floor, goFloor?: string): Promise<Served> {
  const port = await freePort();
  const [cmd, args] = goFloor === undefined ? [process.execPath, [join(BENCH_DIR, 'socket_floor_server.mjs'), kind, String(port)]] : [goFloor, [kind, String(port)]];
  const { child } = await spawnUntil(cmd, args, /socket floor on /, () => {});
  return servedChild(`${goFloor === undefined ? 'node' : 'go'} ${kind} floor`, child, `127.0.0.1:${port}`);
}

/** bench/go/socket_floor built offline (GOPATH mode, stdlib only), or undefined with the reason logged when Go is missing. */
async function buildGoFloor(ctx: BenchContext): Promise<string | undefined> {
  if (!hasBinary('go')) {
    ctx.log("attacks: Go's floor skipped — needs Go (`apt-get install golang-go`)");
    return undefined;
  }
  return buildEtcdGoProgram(join(BENCH_DIR, 'go', 'socket_floor', 'main.go'), join(BENCH_DIR, '..', 'node_modules', '.cache', 'etcdsim-socket-floor'), 'socket_floor');
}

/** Below this many CPU seconds, what an attack added is not told from a window's noise (see the top). */
const NOISE_S = 0.05;
/** Below this much, a growth is not told from a run's spread (a read buffer or two, a collection's timing). */
const NOISE_BYTES = 1 << 20;

/**
 * One attack on a fresh server, after a window as long with the innocent client alone; without
 * `withInnocent` (a floor, which serves no gRPC) no innocent client runs and there is no such window.
 */
async function runAttack(start: () => Promise<Served>, attack: Attack, sz: Sizes, withInnocent = true): Promise<Outcome> {
  const server = await start();
  try {
    let warmS = NaN;
    let warmP50 = NaN;
    if (withInnocent) {
      const w0 = cpuNs(server.pid);
      warmP50 = median(await innocent(server.address, Date.now() + sz.seconds * 1000 + 500));
      warmS = (cpuNs(server.pid) - w0) / 1e9;
    }
    const seen = new Seen();
    const rest = vmHwm(server.pid);
    const deadline = Date.now() + sz.seconds * 1000;
    const cpu0 = cpuNs(server.pid);
    const [lat] = await Promise.all([withInnocent ? innocent(server.address, deadline + 500) : Promise.resolve([]), attack(server.address, seen, sz, deadline)]);
    const cpuS = (cpuNs(server.pid) - cpu0) / 1e9;
    let up = true;
    try {
      process.kill(server.pid, 0);
    } catch {
      up = false;
    }
    const peak = vmHwm(server.pid);
    return { peak, growth: peak - rest, cpuS, addedS: cpuS - warmS, warmP50, p50: median(lat), max: Math.max(...lat), seen: seen.text(), puts: seen.puts, up };
  } finally {
    await server.stop();
  }
}

const mb = (n: number): string => `${(n / 1048576).toFixed(0)} MB`;
/** A difference with its sign: +0.12, -0.03. */
const signed = (x: number, digits = 2): string => `${x >= 0 ? '+' : ''}${x.toFixed(digits)}`;

/** A server's CPU and growth over its runtime's floor on the same attack (see runAttack's caller). */
interface Over {
  readonly cpuS: number;
  readonly growth: number;
}
/** A latency; '—' where no innocent client ran (a floor row), 'failed' where its calls never ended. */
const ms = (n: number): string => (Number.isFinite(n) ? `${n.toFixed(1)} ms` : Number.isNaN(n) || n === -Infinity ? '—' : 'failed');

export const attacksSection: BenchSection = {
  name: 'attacks',
  title: 'the client port under attack (loopback, bounded): etcdsim serve vs etcd 3.4.23, a fresh process per attack, an innocent gRPC client on its own connection',
  async run(ctx: BenchContext): Promise<Row[]> {
    // ETCDSIM_ATTACK_SECONDS=30: each attack runs that long (is the growth bounded, or does it go on with the attack?).
    const seconds = Number(process.env['ETCDSIM_ATTACK_SECONDS'] ?? '');
    const sz = { ...(ctx.quick ? QUICK : FULL), ...(seconds > 0 ? { seconds } : {}) };
    if (!hasBinary('etcd')) {
      ctx.log('attacks: skipped — needs etcd 3.4.23 on PATH (`apt-get install etcd-server`)');
      return [];
    }
    const js = await compileSim(ctx);
    // ETCDSIM_ATTACKS='rapid,HPACK' runs only the attacks whose names contain one of the words (and the no-attack row).
    const only = (process.env['ETCDSIM_ATTACKS'] ?? '').split(',').filter((w) => w !== '');
    const chosen = only.length === 0 ? ATTACKS : ATTACKS.filter((a) => a.name === 'no attack' || only.some((w) => a.name.includes(w)));
    // ETCDSIM_ATTACK_PROFILE=DIR: etcdsim runs with --cpu-prof, its profiles written to DIR (one per attack).
    const profile = process.env['ETCDSIM_ATTACK_PROFILE'];
    const nodeFlags = profile === undefined || profile === '' ? [] : ['--cpu-prof', `--cpu-prof-dir=${profile}`];
    const rows: Row[] = [];
    const goFloor = chosen.some((a) => a.floor !== undefined) ? await buildGoFloor(ctx) : undefined;
    const table: string[] = [
      "| attack | server | peak RSS (growth) | CPU s (added) | over its runtime's floor: CPU, growth | innocent p50 | innocent max | attacker saw |",
      '|---|---|---|---|---|---|---|---|',
    ];
    for (const a of chosen) {
      const e = await runAttack(startEtcd, a.run, sz);
      const s = await runAttack(() => startSim(js, nodeFlags), a.run, sz);
      const f = a.floor === undefined ? undefined : await runAttack(() => startSocketFloor(a.floor!), a.run, sz, false);
      const g = a.floor === undefined || goFloor === undefined ? undefined : await runAttack(() => startSocketFloor(a.floor!, goFloor), a.run, sz, false);
      // What a server spends over its runtime's floor on the same input: what the attack added, less the floor's.
      const over = (o: Outcome, floor: Outcome | undefined): Over | undefined => (floor === undefined ? undefined : { cpuS: o.addedS - floor.cpuS, growth: o.growth - floor.growth });
      const [eo, so] = [over(e, g), over(s, f)];
      const outcomes: Array<readonly [string, Outcome, Over | undefined]> = [['etcd 3.4.23', e, eo], ['etcdsim', s, so]];
      if (g !== undefined) outcomes.push([`Go's floor (${FLOOR_NAMES[a.floor!][1]})`, g, undefined]);
      if (f !== undefined) outcomes.push([`Node's floor (${FLOOR_NAMES[a.floor!][0]})`, f, undefined]);
      // A floor has no innocent window: all it spends is the attack's.
      const added = (o: Outcome): string => (Number.isNaN(o.addedS) ? '' : ` (${signed(o.addedS)})`);
      const overText = (v: Over | undefined): string => (v === undefined ? '' : `${signed(v.cpuS)} s, ${signed(v.growth / 1048576, 0)} MB`);
      for (const [name, o, v] of outcomes) {
        table.push(`| ${a.name} | ${name} | ${mb(o.peak)} (+${mb(o.growth)}) | ${o.cpuS.toFixed(2)}${added(o)} | ${overText(v)} | ${ms(o.p50)} | ${ms(o.max)} | ${o.up ? '' : 'SERVER DOWN; '}${o.seen} |`);
      }
      ctx.log(`attacks: ${a.name}: etcd ${mb(e.peak)} (+${mb(e.growth)}) ${e.cpuS.toFixed(2)} s p50 ${ms(e.p50)} max ${ms(e.max)} (${e.seen}); etcdsim ${mb(s.peak)} (+${mb(s.growth)}) ${s.cpuS.toFixed(2)} s p50 ${ms(s.p50)} max ${ms(s.max)} (${s.seen})`);
      const sample = (x: number): Row['subject'] => ({ nsPerOp: x, rounds: [x], ops: 1 });
      rows.push({ name: `${a.name}: peak RSS`, unit: 'process', measure: 'bytes', subject: sample(s.peak), baselineName: 'etcd 3.4.23', baseline: sample(e.peak), ratio: s.peak / e.peak, note: `growth over the process before the attack ${mb(s.growth)} vs ${mb(e.growth)}; attacker saw: ${s.seen} (etcd: ${e.seen})` });
      const floorNote = f === undefined ? undefined : `Node's floor +${mb(f.growth)}${g === undefined ? '' : `, Go's +${mb(g.growth)}`}`;
      // Where the attacker stored data, what each server holds is compared per put it answered: the same count
      // normally (sz.puts), but a server the deadline cut short stored less, which is no merit.
      const [sp, ep] = s.puts > 0 && e.puts > 0 ? [s.puts, e.puts] : [1, 1];
      const perPut = sp === 1 && ep === 1 ? '' : `per put answered: ${s.puts} vs ${e.puts}`;
      const withPerPut = (note: string | undefined): string | undefined => [note, perPut].filter((x) => x !== undefined && x !== '').join('; ') || undefined;
      const growthRatio = Math.max(s.growth, 1) / sp / (Math.max(e.growth, 1) / ep);
      rows.push({ name: `${a.name}: RSS growth${perPut === '' ? '' : ' per put'}`, unit: 'process', measure: 'bytes', subject: sample(Math.max(s.growth, 1) / sp), baselineName: 'etcd 3.4.23', baseline: sample(Math.max(e.growth, 1) / ep), ratio: growthRatio, target: { maxRatio: 1 }, note: withPerPut(floorNote) });
      const cpuNote = `in all ${s.cpuS.toFixed(2)} s vs ${e.cpuS.toFixed(2)} s, added${added(s)} vs${added(e)}${f === undefined ? '' : `; Node's floor ${f.cpuS.toFixed(2)} s`}${g === undefined ? '' : `, Go's ${g.cpuS.toFixed(2)} s`}`;
      const [sa, ea] = [Math.max(s.addedS, NOISE_S), Math.max(e.addedS, NOISE_S)];
      rows.push({ name: `${a.name}: CPU the attack added${perPut === '' ? '' : ' per put'}`, unit: perPut === '' ? 'attack' : 'put', subject: sample((sa / sp) * 1e9), baselineName: 'etcd 3.4.23', baseline: sample((ea / ep) * 1e9), ratio: sa / sp / (ea / ep), target: { maxRatio: 1 }, note: withPerPut(cpuNote) });
      if (so !== undefined && eo !== undefined) {
        // The measure docs/security.md proposes where a runtime's floor is above etcd's: each server's own cost over its runtime's.
        const [so1, eo1] = [Math.max(so.cpuS, NOISE_S), Math.max(eo.cpuS, NOISE_S)];
        rows.push({ name: `${a.name}: CPU over its runtime's floor`, unit: 'attack', subject: sample(so1 * 1e9), baselineName: "etcd over Go's floor", baseline: sample(eo1 * 1e9), ratio: so1 / eo1, target: { maxRatio: 1 }, note: `etcdsim ${signed(so.cpuS)} s over Node's ${f!.cpuS.toFixed(2)} s, etcd ${signed(eo.cpuS)} s over Go's ${g!.cpuS.toFixed(2)} s` });
      }
      if (so !== undefined && eo !== undefined) {
        const [sg, eg] = [Math.max(so.growth, NOISE_BYTES), Math.max(eo.growth, NOISE_BYTES)];
        rows.push({ name: `${a.name}: RSS growth over its runtime's floor`, unit: 'process', measure: 'bytes', subject: sample(sg), baselineName: "etcd over Go's floor", baseline: sample(eg), ratio: sg / eg, target: { maxRatio: 1 }, note: `etcdsim ${signed(so.growth / 1048576, 0)} MB over Node's +${mb(f!.growth)}, etcd ${signed(eo.growth / 1048576, 0)} MB over Go's +${mb(g!.growth)}` });
      }
      rows.push({ name: `${a.name}: innocent median latency`, unit: 'call', subject: sample(s.p50 * 1e6), baselineName: 'etcd 3.4.23', baseline: sample(e.p50 * 1e6), ratio: s.p50 / e.p50, note: `max ${ms(s.max)} vs ${ms(e.max)}` });
      // The issue's latency goal, against the same process's window before the attack (same load, same code warmed).
      rows.push({ name: `${a.name}: innocent median over its window before`, unit: 'call', subject: sample(s.p50 * 1e6), baselineName: 'etcdsim before the attack', baseline: sample(s.warmP50 * 1e6), ratio: s.p50 / s.warmP50, target: { maxRatio: 2 }, note: `etcd ${ms(e.p50)} over ${ms(e.warmP50)}: ${(e.p50 / e.warmP50).toFixed(2)}×` });
    }
    ctx.log(`attacks: side by side (${sz.seconds} s per attack)\n${table.join('\n')}`);
    return rows;
  },
};
