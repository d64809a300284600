/**
 * The `etcd3` npm client on the simulator, in-process: an object for `Etcd3.prototype.mock()` that
 * answers etcd3's unary calls from the server layer's services and gives its Watch and LeaseKeepAlive
 * streams a duplex backed by the simulator's stream calls. Everything etcd3 does on top (builders,
 * watchers, leases, locks, elections, STM) then runs unchanged against etcd's semantics.
 *
 * The quirks of the plug point are handled here once (docs/etcd3-adapter-notes.md): etcd3 bypasses its
 * error casting under a mock, so errors are cast with etcd3's own castGrpcError; its builders send enums
 * as numbers and its bundled proto names them 'Descend', 'Mod', 'Put'…, so requests accept those names and
 * events carry 'Put'/'Delete'; a stream must end (not error while writable) and tolerate a double cancel.
 *
 * Auth: under a mock etcd3 skips its Authenticator, so no `token` metadata ever reaches `exec`. The adapter
 * does what that Authenticator does against a real etcd: with `auth: { username, password }` it calls
 * Auth.authenticate once, sends the token with every call (streams included, as the call's context), and
 * on "invalid auth token" forgets it, authenticates again and retries the call (connection-pool.js exec).
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import type { Etcd3, IOptions } from 'etcd3';
import { toGrpcError, type CallContext, type EtcdServices, type KeepAliveCall, type WatchCall } from '../server/index.js';
import { hostMicrotask, hostNextTurn } from '../sim/index.js';

/** etcd3's names for etcd's enums (its bundled rpc.proto); the numbers are etcd's. */
const ETCD3_ENUMS: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  sort_order: { None: 0, Ascend: 1, Descend: 2 },
  sort_target: { Key: 0, Version: 1, Create: 2, Mod: 3, Value: 4 },
  result: { Equal: 0, Greater: 1, Less: 2, NotEqual: 3 },
  target: { Version: 0, Create: 1, Mod: 2, Value: 3, Lease: 4 },
  filters: { Noput: 0, Nodelete: 1 },
};

const ETCD3_PERMISSION: Readonly<Record<string, string>> = { READ: 'Read', WRITE: 'Write', READWRITE: 'Readwrite' };

/** Permission types as etcd3 names them ('Read', 'Write', 'Readwrite') in RoleGet answers. */
function permsOut<T extends { perm?: unknown }>(resp: T): T {
  const perm = resp.perm;
  if (!Array.isArray(perm)) return resp;
  return { ...resp, perm: perm.map((p: Plain) => ({ ...p, permType: ETCD3_PERMISSION[String(p['permType'])] ?? p['permType'] })) };
}

/** etcd3's `auth` option. */
interface Credentials {
  readonly username: string;
  readonly password: string;
}

/** etcd's message for an unknown or expired token (what makes etcd3 re-authenticate). */
const INVALID_AUTH_TOKEN = 'etcdserver: invalid auth token';

type Plain = Record<string, unknown>;

function isPlain(v: unknown): v is Plain {
  return typeof v === 'object' && v !== null && !ArrayBuffer.isView(v) && !Array.isArray(v);
}

/** Rewrites etcd3's enum names (anywhere in a request, txn ops and compares included) to etcd's numbers. */
function enumsIn(v: unknown): unknown {
  // Most requests name no enum (a plain get): they go through as they are, without a copy.
  return hasEnumNames(v) ? rewriteEnums(v) : v;
}

/** Whether `v` holds an enum by etcd3's name anywhere (what enumsIn rewrites). */
function hasEnumNames(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(hasEnumNames);
  if (!isPlain(v)) return false;
  for (const k in v) {
    const x = v[k];
    const names = ETCD3_ENUMS[k];
    if (names !== undefined && (typeof x === 'string' || Array.isArray(x))) return true;
    if (typeof x === 'object' && x !== null && hasEnumNames(x)) return true;
  }
  return false;
}

/** etcd's number for an etcd3 name of `names` (its own names only, never an inherited property); else `v`. */
function enumNumber(names: Readonly<Record<string, number>>, v: unknown): unknown {
  return typeof v === 'string' && Object.hasOwn(names, v) ? names[v] : v;
}

function rewriteEnums(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(rewriteEnums);
  if (!isPlain(v)) return v;
  const out: Plain = {};
  for (const [k, x] of Object.entries(v)) {
    const names = ETCD3_ENUMS[k];
    if (names !== undefined && typeof x === 'string') out[k] = enumNumber(names, x);
    else if (names !== undefined && Array.isArray(x)) out[k] = x.map((e: unknown) => enumNumber(names, e));
    else out[k] = rewriteEnums(x);
  }
  return out;
}

/**
 * What enumsIn does, for a Range or Txn request: etcd3's own builders send etcd's numbers, so the request is
 * only looked at along the paths where those carry enums (a range's sort options, a compare's target and
 * result, nested ops and txns) and handed on as it is unless one is a name. The server converts it once;
 * a generic walk here (every field of every op) cost as much as that conversion (issue 28).
 */
function requestEnumsIn(method: string, req: unknown): unknown {
  if (!isPlain(req)) return req;
  return (method === 'range' ? rangeNamesEnum(req) : txnNamesEnum(req)) ? rewriteEnums(req) : req;
}

function rangeNamesEnum(r: Plain): boolean {
  return typeof r['sort_order'] === 'string' || typeof r['sort_target'] === 'string';
}

function txnNamesEnum(t: Plain): boolean {
  const compare = t['compare'];
  if (Array.isArray(compare)) {
    for (const c of compare as unknown[]) if (isPlain(c) && (typeof c['target'] === 'string' || typeof c['result'] === 'string')) return true;
  }
  return opsNameEnum(t['success']) || opsNameEnum(t['failure']);
}

function opsNameEnum(ops: unknown): boolean {
  if (!Array.isArray(ops)) return false;
  for (const op of ops as unknown[]) {
    if (!isPlain(op)) continue;
    const range = op['request_range'];
    const txn = op['request_txn'];
    if ((isPlain(range) && rangeNamesEnum(range)) || (isPlain(txn) && txnNamesEnum(txn))) return true;
  }
  return false;
}

/**
 * Event types as etcd3 names them ('Put' / 'Delete'; its watcher lowercases them, elections compare them), in a
 * Watch call's response, renamed in place: a WatchCall makes each response and its events fresh for its one
 * listener (this duplex), so nothing else holds them — a copy of every response and event was a tenth of the
 * simulator's own part of a watch delivery (issue 28). Only Watch responses carry events.
 */
function watchEventsOut(resp: unknown): unknown {
  const events = (resp as { events?: unknown }).events;
  if (!Array.isArray(events)) return resp;
  for (const ev of events as Plain[]) {
    const type = ev['type'];
    if (type === 'PUT') ev['type'] = 'Put';
    else if (type === 'DELETE') ev['type'] = 'Delete';
  }
  return resp;
}

interface Etcd3Module {
  Etcd3: new (options?: IOptions) => Etcd3;
  castGrpcError(err: Error): Error;
  ClientClosedError: new (service: string) => Error;
}

let etcd3Module: Etcd3Module | undefined;

/** etcd3 is an optional peer: loaded on first use, with a clear message when it is missing. */
function loadEtcd3(): Etcd3Module {
  if (etcd3Module === undefined) {
    try {
      etcd3Module = createRequire(import.meta.url)('etcd3') as Etcd3Module;
    } catch (err) {
      throw new Error(`etcdsim: sim.etcd3() needs the etcd3 package (npm install etcd3@1.1.2): ${String(err)}`);
    }
  }
  return etcd3Module;
}

/**
 * What etcd3's pool hands to `markFailed(resource, err)` for a stream error: under a mock there is no
 * host to reset, and its fault-handling policy just runs the function it is given.
 */
const RESOURCE = {
  resetAllServices(): void {},
  faultHandling: { execute: <T>(fn: () => T): Promise<T> => Promise.resolve().then(fn) },
};

/** gRPC metadata as etcd3 passes it along (empty: no auth under the simulator). */
const METADATA = { get: (): unknown[] => [], set(): void {}, getMap: (): Record<string, unknown> => ({}) };

/** A grpc-js-like duplex over one simulator stream call. */
class SimDuplex extends EventEmitter {
  writable = true;
  private closed = false;

  constructor(
    private readonly call: WatchCall | KeepAliveCall,
    private readonly cast: (err: Error) => Error,
    private readonly mapIn: (req: unknown) => unknown,
    private readonly mapOut: (resp: unknown) => unknown,
    /**
     * grpc-js's order: a call that fails emits 'error' while the duplex is still writable (etcd3 then marks
     * the host failed), and 'end' after. The mock() path keeps its historical order (not writable first).
     */
    private readonly writableUntilEnd = false,
  ) {
    super();
    call.onResponse((rs: readonly unknown[]) => {
      for (const r of rs) this.emit('data', this.mapOut(r));
    });
    call.onEnd((err) => {
      if (!this.writableUntilEnd) this.writable = false;
      // Never synchronously inside the caller's write/cancel: etcd3 expects stream events to come later —
      // but as soon as grpc-js reports a canceled call's status (process.nextTick), before any timer.
      hostMicrotask(() => {
        if (err !== undefined && !this.closed) this.emit('error', this.cast(err));
        this.writable = false;
        this.closed = true;
        this.emit('end');
      });
    });
  }

  write(req: unknown): boolean {
    if (!this.writable) return false;
    (this.call as WatchCall).write(this.mapIn(req) as never);
    return true;
  }

  /** Half-close by the client. */
  end(): void {
    this.closed = true;
    this.call.end();
  }

  /** Cancel by the client: ends the call; etcd3 may call it twice. */
  cancel(): void {
    this.closed = true;
    this.call.end();
  }
}

const identity = (x: unknown): unknown => x;

/** etcd3's ICallable for `mock()`: unary calls and streams answered by the simulator's services. */
export class SimCallable {
  readonly callOptionsFactory = undefined;
  private readonly cast: (err: Error) => Error;
  /** The pending or current token (etcd3's Authenticator.awaitingMetadata). */
  private token: Promise<string> | undefined;

  constructor(
    private readonly services: EtcdServices,
    private readonly credentials?: Credentials,
  ) {
    this.cast = loadEtcd3().castGrpcError;
  }

  /** The caller's context: the token when credentials were given (authenticating first if needed). */
  private async context(): Promise<CallContext> {
    const creds = this.credentials;
    if (creds === undefined) return {};
    this.token ??= Promise.resolve().then(() => {
      try {
        return this.services.auth.authenticate({ name: creds.username, password: creds.password }).token;
      } catch (err) {
        this.token = undefined;
        throw this.cast(err instanceof Error ? err : new Error(String(err)));
      }
    });
    return { token: await this.token };
  }

  exec(service: string, method: string, payload: unknown): Promise<unknown> {
    const svc = (this.services as unknown as Record<string, Record<string, unknown> | undefined>)[serviceKey(service)];
    const fn = svc?.[method] as ((req: unknown, ctx: CallContext) => object | Promise<object>) | undefined;
    if (svc === undefined || typeof fn !== 'function') return Promise.reject(this.cast(unimplemented(service, method)));
    // Only Range and Txn requests carry enums (sort options, compares); the rest go through untouched.
    const req = method === 'range' || method === 'txn' ? requestEnumsIn(method, payload ?? {}) : (payload ?? {});
    // etcd3 sends Authenticate itself without a token; everything else carries the caller's.
    // Only RoleGet's answer is renamed (its permission types); the rest go back as the service made them.
    const out = method === 'roleGet' ? permsOut : asIs;
    if (this.credentials === undefined || (service === 'Auth' && method === 'authenticate')) return this.answer(svc, fn, req, {}, out);
    return this.execWithToken(svc, fn, req, out);
  }

  /**
   * One call's answer, as etcd3's promise: the service runs at once (as an async function's body would),
   * and an answer that is already there is one resolved promise — no await chain, which cost more than
   * a put itself. A cluster member answers with a promise: its answer and error are mapped the same way.
   */
  private answer(svc: object, fn: (req: unknown, ctx: CallContext) => object | Promise<object>, req: unknown, ctx: CallContext, out: (res: object) => unknown): Promise<unknown> {
    let res: object | Promise<object>;
    try {
      res = fn.call(svc, req, ctx);
    } catch (err) {
      return Promise.reject(this.castAny(err));
    }
    if (res instanceof Promise) return res.then(out, (err: unknown) => Promise.reject(this.castAny(err)));
    return Promise.resolve(out(res));
  }

  private castAny(err: unknown): Error {
    return this.cast(err instanceof Error ? err : new Error(String(err)));
  }

  /** A call with the caller's token; on "invalid auth token" the token is fetched again and the call retried once. */
  private async execWithToken(svc: object, fn: (req: unknown, ctx: CallContext) => object | Promise<object>, req: unknown, out: (res: object) => unknown): Promise<unknown> {
    try {
      return await this.answer(svc, fn, req, await this.context(), out);
    } catch (err) {
      if (!isInvalidToken(err)) throw err;
      this.token = undefined; // etcd3: invalidateMetadata(), then the call again
      return this.answer(svc, fn, req, await this.context(), out);
    }
  }

  async withConnection<R>(service: string, fn: (args: { resource: unknown; client: unknown; metadata: unknown }) => R | Promise<R>): Promise<R> {
    if (service !== 'Watch' && service !== 'Lease') throw this.cast(unimplemented(service, 'stream'));
    const ctx = await this.context();
    const client = {
      watch: () => new SimDuplex(this.services.watch.watch(ctx), this.cast, enumsIn, watchEventsOut),
      leaseKeepAlive: () => new SimDuplex(this.services.lease.leaseKeepAlive(ctx), this.cast, identity, identity),
    };
    return fn({ resource: RESOURCE, client, metadata: METADATA });
  }

  markFailed(): void {}
}

const asIs = (res: object): unknown => res;

function isInvalidToken(err: unknown): boolean {
  return err instanceof Error && err.message.includes(INVALID_AUTH_TOKEN);
}

function serviceKey(service: string): string {
  return service === 'KV' ? 'kv' : service.charAt(0).toLowerCase() + service.slice(1);
}

function unimplemented(service: string, method: string): Error {
  const err = new Error(`12 UNIMPLEMENTED: etcdsim does not implement ${service}.${method}`) as Error & { code: number; details: string };
  err.code = 12;
  err.details = `etcdsim does not implement ${service}.${method}`;
  return err;
}

/** A constant reconnect backoff: etcd3's default is randomised (cockatiel jitter), which would break determinism. */
interface ConstantBackoff {
  readonly duration: number;
  next(): ConstantBackoff;
}
const CONSTANT_BACKOFF: ConstantBackoff = {
  duration: 100,
  next: () => CONSTANT_BACKOFF,
};

/** Options of `sim.etcd3()`: etcd3's own options, minus the hosts (there is no network). @public */
export type SimEtcd3Options = Omit<IOptions, 'hosts'>;

/** A real `Etcd3` client wired to the simulator in-process. */
export function createEtcd3Client(services: EtcdServices, options: SimEtcd3Options = {}): Etcd3 {
  const { Etcd3 } = loadEtcd3();
  const client = new Etcd3({
    ...options,
    hosts: '127.0.0.1:0',
    faultHandling: { watchBackoff: CONSTANT_BACKOFF, ...options.faultHandling } as NonNullable<IOptions['faultHandling']>,
  });
  const creds = options.auth === undefined ? undefined : { username: options.auth.username, password: options.auth.password };
  client.mock(new SimCallable(services, creds) as unknown as Parameters<Etcd3['mock']>[0]);
  return client;
}

// ---------------------------------------------------------------------------------------------------
// etcd3 over several members of a cluster, failing over with etcd3's own connection pool

/** One host of a cluster client: its address (etcd3's `hosts` entry) and a connection to its member. */
export interface Etcd3SimHost {
  /** The member's client URL, as etcd3's `hosts` option names it. */
  readonly address: string;
  /** The member's services over the client's link, each call with the client's deadline. */
  open(): EtcdServices;
}

/** The parts of etcd3's ConnectionPool (lib/connection-pool.js) the cluster client plugs into. */
interface PoolInternals {
  hosts: Array<{ host: string; closed: boolean; getServiceClient(name: string): unknown }>;
  shuffledHosts(): Generator<unknown, never, unknown>;
  authenticator: { getCredentialsFromHost(address: string, name: string, password: string): Promise<string> };
}

/** grpc-js's connectivity state READY: what etcd3's resetAllServices asks a service's channel. */
const GRPC_READY = 2;

/** The token etcd3's pool puts in a call's metadata (its Authenticator), as the call's context. */
function ctxOfMetadata(metadata: unknown): CallContext {
  const get = (metadata as { get?: (k: string) => unknown[] } | undefined)?.get;
  const token = typeof get === 'function' ? get.call(metadata, 'token')[0] : undefined;
  return token === undefined ? {} : { token: String(token) };
}

/**
 * A grpc-js service client of one etcd service on one host, for etcd3's pool: unary methods take
 * `(payload, metadata, options, callback)` as grpc-js's do and answer from the host's member; Watch and
 * LeaseKeepAlive give duplexes over the member's stream calls. A call to a member that is down fails as
 * the connection does (Unavailable), asynchronously, as over a network.
 */
function serviceClient(service: string, host: Etcd3SimHost, cast: (err: Error) => Error, answered: () => void): object {
  const key = serviceKey(service);
  const failedStream = (err: unknown): SimDuplex => {
    const e = toGrpcError(err);
    // grpc-js reports a refused connection on a later turn of the event loop (after the caller has set its
    // listeners), never within the promise chain that opened the stream.
    const call = { onResponse(): void {}, onEnd(fn: (err: unknown) => void): void { hostNextTurn(() => fn(e)); }, end(): void {}, write(): void {} };
    return new SimDuplex(call as unknown as WatchCall, cast, identity, identity, true);
  };
  const stream = (open: (s: EtcdServices, ctx: CallContext) => WatchCall | KeepAliveCall, mapIn: (r: unknown) => unknown, mapOut: (r: unknown) => unknown) =>
    (metadata: unknown): SimDuplex => {
      try {
        return new SimDuplex(open(host.open(), ctxOfMetadata(metadata)), cast, mapIn, mapOut, true);
      } catch (err) {
        return failedStream(err);
      }
    };
  const fixed: Record<string, unknown> = {
    getChannel: () => ({ getConnectivityState: () => GRPC_READY }),
    close: () => undefined,
    watch: stream((s, ctx) => s.watch.watch(ctx), enumsIn, watchEventsOut),
    leaseKeepAlive: stream((s, ctx) => s.lease.leaseKeepAlive(ctx), identity, identity),
  };
  return new Proxy(fixed, {
    get: (target, name) => {
      // Never a thenable: a promise resolved with this client must not take it for one.
      if (typeof name !== 'string' || name === 'then') return undefined;
      if (name in target) return target[name];
      return (payload: unknown, metadata: unknown, _options: unknown, callback: (err: Error | null, res?: unknown) => void): void => {
        const req = name === 'range' || name === 'txn' ? requestEnumsIn(name, payload ?? {}) : (payload ?? {});
        Promise.resolve()
          .then(() => {
            const svc = (host.open() as unknown as Record<string, Record<string, unknown> | undefined>)[key];
            const fn = svc?.[name];
            if (typeof fn !== 'function') throw unimplemented(service, name);
            return (fn as (req: unknown, ctx: CallContext) => unknown).call(svc, req, ctxOfMetadata(metadata));
          })
          .then(
            (res) => callback(null, name === 'roleGet' ? permsOut(res as object) : res),
            (err: unknown) => callback(toGrpcError(err)),
          )
          .finally(answered);
      };
    },
  });
}

/**
 * A real `Etcd3` client over several members, failing over by etcd3's own rules: its ConnectionPool runs
 * unchanged — hosts in a fresh Fisher–Yates order per call, a circuit breaker per host (3 consecutive
 * recoverable failures open it for 5 s), the global retry policy (3 retries on a recoverable error:
 * Unavailable, DeadlineExceeded, Internal, ...), streams that mark their host failed and reconnect through
 * the pool — and only its transport is replaced: each host's grpc-js service clients answer from that
 * host's member. The shuffle draws from `random` instead of Math.random, so the same seed picks the same
 * hosts; the auth token is fetched from the members, first host first, as its Authenticator does.
 */
export function createEtcd3ClusterClient(
  hosts: readonly Etcd3SimHost[],
  options: SimEtcd3Options,
  random: { nextFloat(): number },
  /** Called after each unary answer reaches etcd3 (the simulator fires zero-delay timers then). */
  answered: () => void = () => undefined,
): Etcd3 {
  const { Etcd3, castGrpcError, ClientClosedError } = loadEtcd3();
  const client = new Etcd3({
    ...options,
    hosts: hosts.map((h) => h.address),
    faultHandling: { watchBackoff: CONSTANT_BACKOFF, ...options.faultHandling } as NonNullable<IOptions['faultHandling']>,
  });
  const pool = (client as unknown as { pool: PoolInternals }).pool;
  pool.hosts.forEach((h, i) => {
    const host = hosts[i]!;
    const cache = new Map<string, object>();
    h.getServiceClient = (name: string) => {
      if (h.closed) throw new ClientClosedError(name); // as Host.getServiceClient after close()
      let c = cache.get(name);
      if (c === undefined) {
        c = serviceClient(name, host, castGrpcError, answered);
        cache.set(name, c);
      }
      return c;
    };
  });
  // etcd3's shuffledHosts (an endless Fisher–Yates over its hosts), with the simulator's random stream.
  pool.shuffledHosts = function* shuffled(): Generator<unknown, never, unknown> {
    const order = pool.hosts.slice();
    for (;;) {
      for (let i = order.length - 1; i >= 0; i--) {
        const j = Math.floor((i + 1) * random.nextFloat());
        [order[j], order[i]] = [order[i]!, order[j]!];
        yield order[i];
      }
    }
  };
  pool.authenticator.getCredentialsFromHost = async (address: string, name: string, password: string): Promise<string> => {
    const host = hosts.find((h) => h.address.replace(/^https?:\/\//, '') === address);
    if (host === undefined) throw new Error(`etcdsim: no member at ${address}`);
    try {
      return (await host.open().auth.authenticate({ name, password })).token;
    } catch (err) {
      throw castGrpcError(toGrpcError(err));
    }
  };
  return client;
}
