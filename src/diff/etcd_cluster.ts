/**
 * A throwaway cluster of separate member processes, as etcd is deployed: N members (3 by default) of one
 * binary — the real etcd, or etcdsim as the etcd binary (`etcdsimCommand()`: `node bin/etcdsim.js etcd`) —
 * on free loopback ports, all given one --initial-cluster, each with its own data dir (in /dev/shm when it
 * exists, so fsyncs are cheap, as for the single etcd of etcd_process.ts). The cluster differential, the
 * process fault tests and the start-up bench share it, so both binaries are started and hurt the same way.
 * The faults are the operating system's, put on a cluster from outside:
 *
 *  - pause / resume a member: SIGSTOP / SIGCONT. A paused member neither answers clients nor takes part in
 *    Raft; when resumed it catches up from the leader's log (or, far enough behind, a snapshot) — the
 *    "follower that lags" of the simulator.
 *  - kill / restart a member: SIGKILL (a crash) or any other signal (SIGTERM: etcd's graceful stop), then
 *    the same command line on the same data dir, so etcd rebuilds its state from its WAL and backend and
 *    rejoins.
 *  - leader() / moveLeader(): who leads, as the members' Maintenance.Status reports it, and etcd's leader
 *    transfer (Maintenance.MoveLeader, sent to the leader).
 *
 * Readiness is etcd's own log line saying it serves client traffic (3.4 publishes the member to the
 * cluster first, which takes a leader and a commit), within a bounded wait, so nothing here waits a fixed
 * time. The ports are found free before the members bind them, so another process may take one meanwhile:
 * a start that fails on a taken port is retried on new ports. Every member is killed by PID (paused ones
 * too) and its data dir removed on stop(), on a failed start — and when the Node process exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { connectEtcd, etcdService, type EtcdGrpcClient } from '../grpc/index.js';
import type * as M from '../server/messages.js';
import { hostNow } from '../sim/index.js';
import { findEtcdBinary, freePort } from './etcd_process.js';

/**
 * A member's process state, as the harness left it: 'starting' from its spawn until it logs that it serves
 * (a client sent to it meanwhile would be refused at once, and a workload that routes around down members
 * would spin on the refusals), then 'running'.
 */
export type MemberState = 'starting' | 'running' | 'paused' | 'killed';

/** One member of the real cluster. */
export interface EtcdClusterMember {
  /** etcd's --name: m0, m1, ... */
  readonly name: string;
  /** The member ID (uint64, decimal), as MemberList and response headers carry it. */
  readonly id: string;
  /** host:port of its client URL. */
  readonly address: string;
  readonly peerUrl: string;
  readonly dataDir: string;
  /** PID of its current process (a restart gives a new one). */
  readonly pid: number;
  readonly state: MemberState;
  /** Its last log lines (for failure messages). */
  log(): string;
}

export interface EtcdCluster {
  readonly members: readonly EtcdClusterMember[];
  /** host:port of every member, in member order. */
  endpoints(): string[];
  /** A gRPC client pinned to member i (one channel per member, closed by stop(); restart() opens a new one). */
  client(i: number): EtcdGrpcClient;
  /** SIGSTOP: the member stops answering clients and peers, as a hung process would. */
  pause(i: number): void;
  /** SIGCONT: the paused member goes on where it stopped. */
  resume(i: number): void;
  /**
   * Sends `signal` (default SIGKILL: a crash; SIGTERM: etcd's graceful stop) and resolves once the process
   * is gone; the data dir stays. A paused member is continued after the signal, so it can act on it.
   */
  kill(i: number, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a killed member again on its data dir and ports; resolves once it serves clients. */
  restart(i: number): Promise<void>;
  /**
   * The leader as the reachable members report it (Maintenance.Status), or undefined when none of them
   * knows one (an election in progress, no quorum).
   */
  leader(): Promise<number | undefined>;
  /** Waits until the reachable members report a leader; rejects after `timeoutMs` (default 15 s). */
  waitForLeader(timeoutMs?: number): Promise<number>;
  /** Transfers leadership to member `to` (Maintenance.MoveLeader, sent to the current leader). */
  moveLeader(to: number): Promise<void>;
  /** Kills every member by PID (paused ones too) and removes the data dirs. Idempotent. */
  stop(): Promise<void>;
}

/** A program that takes etcd's flags, with what it needs beyond them. */
export interface EtcdCommand {
  readonly command: string;
  /** Arguments before etcd's flags (`bin/etcdsim.js etcd`). */
  readonly args: readonly string[];
  /** Environment on top of the parent's (from which every ETCD_* and ETCDSIM_* variable is removed). */
  readonly env?: Readonly<Record<string, string>> | undefined;
}

/**
 * etcdsim as the etcd binary, as release `version`: this package's launcher (bin/etcd_launch.sh: the start-up
 * snapshot, or `bin/etcdsim.js etcd`) on this Node, as install-bin's `etcd` starts it.
 */
export function etcdsimCommand(version = '3.4'): EtcdCommand {
  // src/diff and dist/diff are both two folders below the package root.
  const launch = fileURLToPath(new URL('../../bin/etcd_launch.sh', import.meta.url));
  return { command: '/bin/sh', args: [launch], env: { ETCDSIM_ETCD_VERSION: version, ETCDSIM_NODE: process.execPath } };
}

export interface StartClusterOptions {
  /** Members (default 3). */
  readonly size?: number | undefined;
  /** The etcd binary's path (default `etcd` on PATH), or a command that takes etcd's flags. */
  readonly bin?: string | EtcdCommand | undefined;
  /** More of etcd's flags for every member, as etcd takes them (`--snapshot-count=100`). */
  readonly flags?: readonly string[] | undefined;
  /** --heartbeat-interval and --election-timeout in ms (default etcd's own: 100 and 1000). */
  readonly heartbeatMs?: number | undefined;
  readonly electionMs?: number | undefined;
  /** Give up on a member's readiness after this long (default 30 s). */
  readonly readyTimeoutMs?: number | undefined;
  /** Deadline of each unary call of the members' clients (default 5 s). */
  readonly deadlineMs?: number | undefined;
  /** Where the data dirs go (default /dev/shm when it exists, else the OS temp dir). */
  readonly baseDir?: string | undefined;
}

interface Member {
  readonly name: string;
  id: string;
  readonly address: string;
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly dataDir: string;
  child: ChildProcess | undefined;
  exited: Promise<void>;
  state: MemberState;
  logText: string;
  client: EtcdGrpcClient;
}

/** Maintenance.MoveLeader on a raw grpc-js stub. */
type MoveLeaderFn = (req: M.MoveLeaderRequest, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null) => void) => void;

/**
 * etcd's readiness line: "ready to serve client requests" (capnslog), "serving client traffic insecurely"
 * / "securely" (zap, which this harness selects), logged once the member published itself and serves.
 */
const READY = /ready to serve client requests|serving client traffic (in)?securely/;

/** How often a start is tried on new ports when a port found free was taken before a member bound it. */
const PORT_RACE_ATTEMPTS = 3;

/** Starts a fresh cluster of `size` members and resolves once every member serves clients and one leads. */
export async function startEtcdCluster(opts: StartClusterOptions = {}): Promise<EtcdCluster> {
  const bin: EtcdCommand = typeof opts.bin === 'object' ? opts.bin : { command: findEtcdBinary(opts.bin), args: [] };
  const size = opts.size ?? 3;
  if (!Number.isSafeInteger(size) || size < 1) throw new RangeError(`cluster size must be a positive integer, got ${size}`);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(bin, size, opts);
    } catch (err) {
      if (attempt >= PORT_RACE_ATTEMPTS || !(err instanceof Error) || !err.message.includes('address already in use')) throw err;
    }
  }
}

async function startOnce(bin: EtcdCommand, size: number, opts: StartClusterOptions): Promise<EtcdCluster> {
  const base = opts.baseDir ?? (existsSync('/dev/shm') ? '/dev/shm' : tmpdir());
  const deadlineMs = opts.deadlineMs ?? 5_000;
  const token = mkdtempSync(join(base, 'etcdsim-cluster-'));
  const members: Member[] = [];
  for (let i = 0; i < size; i++) {
    const [cp, pp] = [await freePort(), await freePort()];
    const address = `127.0.0.1:${cp}`;
    members.push({
      name: `m${i}`,
      id: '0',
      address,
      clientUrl: `http://${address}`,
      peerUrl: `http://127.0.0.1:${pp}`,
      dataDir: join(token, `m${i}`),
      child: undefined,
      exited: Promise.resolve(),
      state: 'killed',
      logText: '',
      client: connectEtcd(address, { deadlineMs }),
    });
  }
  const cluster = new RealCluster(bin, token, members, opts);
  try {
    await Promise.all(members.map((m) => cluster.launch(m)));
    for (const m of members) {
      const s = await m.client.maintenance.status({});
      m.id = s.header.member_id;
    }
    await cluster.waitForLeader();
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

/** A running cluster: its member processes, their clients, and the faults put on them from outside. */
class RealCluster implements EtcdCluster {
  readonly members: readonly EtcdClusterMember[];
  private readonly readyTimeoutMs: number;
  private readonly deadlineMs: number;
  private readonly initialCluster: string;
  private stopping: Promise<void> | undefined;
  private readonly killAll = (): void => {
    for (const m of this.all) m.child?.kill('SIGKILL');
    rmSync(this.token, { recursive: true, force: true });
  };

  constructor(
    private readonly bin: EtcdCommand,
    /** The data dirs' parent, and the cluster's unique --initial-cluster-token. */
    private readonly token: string,
    private readonly all: readonly Member[],
    private readonly opts: StartClusterOptions,
  ) {
    this.readyTimeoutMs = opts.readyTimeoutMs ?? 30_000;
    this.deadlineMs = opts.deadlineMs ?? 5_000;
    this.initialCluster = all.map((m) => `${m.name}=${m.peerUrl}`).join(',');
    this.members = all.map(memberView);
    process.once('exit', this.killAll);
  }

  private args(m: Member): string[] {
    return [
      '--name', m.name, '--data-dir', m.dataDir,
      '--listen-client-urls', m.clientUrl, '--advertise-client-urls', m.clientUrl,
      '--listen-peer-urls', m.peerUrl, '--initial-advertise-peer-urls', m.peerUrl,
      '--initial-cluster', this.initialCluster, '--initial-cluster-state', 'new',
      // A unique token: members of another cluster on a reused port cannot join this one.
      '--initial-cluster-token', this.token,
      '--heartbeat-interval', String(this.opts.heartbeatMs ?? 100), '--election-timeout', String(this.opts.electionMs ?? 1000),
      // zap at info level: the readiness line is an info line.
      '--logger', 'zap', '--log-outputs', 'stderr', '--log-level', 'info',
      ...(this.opts.flags ?? []),
    ];
  }

  /**
   * Spawns member m and resolves once it logs its readiness (rejects if it exits first); with `freshClient`
   * its client is replaced before it counts as running.
   */
  launch(m: Member, freshClient = false): Promise<void> {
    const child = spawn(this.bin.command, [...this.bin.args, ...this.args(m)], { stdio: ['ignore', 'pipe', 'pipe'], env: memberEnv(this.bin) });
    m.child = child;
    m.state = 'starting';
    m.logText = '';
    m.exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    void m.exited.then(() => {
      if (m.child === child) m.state = 'killed';
    });
    const readyTimeoutMs = this.readyTimeoutMs;
    return new Promise<void>((resolve, reject) => {
      let ready = false;
      const guard = setTimeout(() => reject(new Error(`etcd member ${m.name} not ready within ${readyTimeoutMs} ms:\n${m.logText.slice(-2000)}`)), readyTimeoutMs);
      const onData = (d: Buffer): void => {
        m.logText = (m.logText + d.toString()).slice(-20_000);
        if (!ready && READY.test(m.logText)) {
          ready = true;
          clearTimeout(guard);
          if (freshClient) {
            // The old channel backs off after the refused connections while the member was down.
            m.client.close();
            m.client = connectEtcd(m.address, { deadlineMs: this.deadlineMs });
          }
          if (m.child === child && m.state === 'starting') m.state = 'running';
          resolve();
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      void m.exited.then(() => {
        clearTimeout(guard);
        if (!ready) reject(new Error(`etcd member ${m.name} exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${m.logText.slice(-2000)}`));
      });
    });
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      process.off('exit', this.killAll);
      for (const m of this.all) m.client.close();
      await Promise.all(
        this.all.map(async (m) => {
          const c = m.child;
          if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
          // SIGKILL: the data dirs are thrown away, and a SIGTERMed 3.4 leader first tries to hand its
          // leadership to members that are stopping too, which takes seconds.
          c.kill('SIGKILL');
          await m.exited;
        }),
      );
      rmSync(this.token, { recursive: true, force: true });
    })();
    return this.stopping;
  }

  private at(i: number): Member {
    const m = this.all[i];
    if (m === undefined) throw new RangeError(`no member ${i} (the cluster has ${this.all.length})`);
    return m;
  }

  endpoints(): string[] {
    return this.all.map((m) => m.address);
  }

  client(i: number): EtcdGrpcClient {
    return this.at(i).client;
  }

  pause(i: number): void {
    const m = this.at(i);
    if (m.state !== 'running') throw new Error(`member ${m.name} is ${m.state}, not running`);
    m.child!.kill('SIGSTOP');
    m.state = 'paused';
  }

  resume(i: number): void {
    const m = this.at(i);
    if (m.state !== 'paused') throw new Error(`member ${m.name} is ${m.state}, not paused`);
    m.child!.kill('SIGCONT');
    m.state = 'running';
  }

  async kill(i: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const m = this.at(i);
    if (m.state === 'killed') return;
    const child = m.child!;
    child.kill(signal);
    // A stopped process acts on no signal but SIGKILL until it is continued.
    if (m.state === 'paused' && signal !== 'SIGKILL') child.kill('SIGCONT');
    // A bounded wait: a member that outlives a gentler signal is killed, never left behind.
    let outlived = false;
    const guard = setTimeout(() => {
      outlived = true;
      child.kill('SIGKILL');
    }, this.readyTimeoutMs);
    await m.exited;
    clearTimeout(guard);
    m.state = 'killed';
    if (outlived) throw new Error(`member ${m.name} did not exit on ${signal} within ${this.readyTimeoutMs} ms (killed):\n${m.logText.slice(-2000)}`);
  }

  async restart(i: number): Promise<void> {
    const m = this.at(i);
    if (m.state !== 'killed') throw new Error(`member ${m.name} is ${m.state}: kill it before restarting it`);
    await this.launch(m, true);
  }

  async leader(): Promise<number | undefined> {
    const answers = await Promise.all(this.all.map(statusOf));
    // The freshest term's view wins: a member that was cut off may still name an old leader.
    let best: { term: bigint; leader: string } | undefined;
    for (const s of answers) {
      if (s === undefined || s.leader === '0') continue;
      const term = BigInt(s.raftTerm);
      if (best === undefined || term > best.term) best = { term, leader: s.leader };
    }
    if (best === undefined) return undefined;
    const i = this.all.findIndex((m) => m.id === best.leader);
    return i < 0 ? undefined : i;
  }

  async waitForLeader(timeoutMs = 15_000): Promise<number> {
    let timedOut = false;
    const guard = setTimeout(() => (timedOut = true), timeoutMs);
    try {
      for (;;) {
        const l = await this.leader();
        if (l !== undefined) return l;
        if (timedOut) throw new Error(`no leader within ${timeoutMs} ms`);
        // Waiting on a condition of a real cluster: ask again after one heartbeat.
        await new Promise((r) => setTimeout(r, this.opts.heartbeatMs ?? 100));
      }
    } finally {
      clearTimeout(guard);
    }
  }

  async moveLeader(to: number): Promise<void> {
    const target = this.at(to);
    const from = await this.waitForLeader();
    if (from === to) return;
    const m = this.at(from);
    // The message-form client (grpc/client.ts) has no MoveLeader: call it on a raw Maintenance stub.
    const raw = new (etcdService('Maintenance'))(m.address, grpc.credentials.createInsecure());
    const call = (raw as unknown as { MoveLeader: MoveLeaderFn }).MoveLeader.bind(raw);
    try {
      await new Promise<void>((resolve, reject) => {
        // etcd answers once the transferee leads, or fails after about an election timeout.
        call({ targetID: target.id }, new grpc.Metadata(), { deadline: hostNow() + this.deadlineMs }, (err) => (err ? reject(err) : resolve()));
      });
    } finally {
      raw.close();
    }
  }
}

/** The parent's environment without etcd's variables (a developer's shell may set some), plus the command's. */
function memberEnv(bin: EtcdCommand): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('ETCD_') && !k.startsWith('ETCDSIM_')) env[k] = v;
  return { ...env, ...bin.env };
}

/** A member's Maintenance.Status, or undefined when it is not running or does not answer. */
async function statusOf(m: Member): Promise<M.StatusResponse | undefined> {
  if (m.state !== 'running') return undefined;
  try {
    return await m.client.maintenance.status({});
  } catch {
    return undefined;
  }
}

/** What a caller sees of a member: live views of its ID, process and state. */
function memberView(m: Member): EtcdClusterMember {
  return {
    name: m.name,
    get id() {
      return m.id;
    },
    address: m.address,
    peerUrl: m.peerUrl,
    dataDir: m.dataDir,
    get pid() {
      return m.child?.pid ?? -1;
    },
    get state() {
      return m.state;
    },
    log: () => m.logText,
  };
}
