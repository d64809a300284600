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
import type { CallContext, EtcdServices, KeepAliveCall, WatchCall } from '../server/index.js';

/** etcd3's names for etcd's enums (its bundled rpc.proto); the numbers are etcd's. */
const ETCD3_ENUMS: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  sort_order: { None: 0, Ascend: 1, Descend: 2 },
  sort_target: { Key: 0, Version: 1, Create: 2, Mod: 3, Value: 4 },
  result: { Equal: 0, Greater: 1, Less: 2, NotEqual: 3 },
  target: { Version: 0, Create: 1, Mod: 2, Value: 3, Lease: 4 },
  filters: { Noput: 0, Nodelete: 1 },
};

const ETCD3_EVENT_TYPE: Readonly<Record<string, string>> = { PUT: 'Put', DELETE: 'Delete' };
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
  if (Array.isArray(v)) return v.map(enumsIn);
  if (!isPlain(v)) return v;
  const out: Plain = {};
  for (const [k, x] of Object.entries(v)) {
    const names = ETCD3_ENUMS[k];
    if (names !== undefined && typeof x === 'string' && x in names) out[k] = names[x];
    else if (names !== undefined && Array.isArray(x)) out[k] = x.map((e) => (typeof e === 'string' && e in names ? names[e] : e));
    else out[k] = enumsIn(x);
  }
  return out;
}

/** Event types as etcd3 names them ('Put' / 'Delete'): its watcher lowercases them, elections compare them. */
function eventsOut<T extends { events?: unknown }>(resp: T): T {
  const events = resp.events;
  if (!Array.isArray(events) || events.length === 0) return resp;
  return { ...resp, events: events.map((ev: Plain) => ({ ...ev, type: ETCD3_EVENT_TYPE[String(ev['type'])] ?? ev['type'] })) };
}

interface Etcd3Module {
  Etcd3: new (options?: IOptions) => Etcd3;
  castGrpcError(err: Error): Error;
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
  ) {
    super();
    call.onResponse((rs: readonly unknown[]) => {
      for (const r of rs) this.emit('data', this.mapOut(r));
    });
    call.onEnd((err) => {
      this.writable = false;
      // Never synchronously inside the caller's write/cancel: etcd3 expects stream events to come later —
      // but as soon as grpc-js reports a canceled call's status (process.nextTick), before any timer.
      queueMicrotask(() => {
        if (err !== undefined && !this.closed) this.emit('error', this.cast(err));
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

  async exec(service: string, method: string, payload: unknown): Promise<unknown> {
    const svc = (this.services as unknown as Record<string, Record<string, unknown> | undefined>)[serviceKey(service)];
    const fn = svc?.[method];
    if (typeof fn !== 'function') throw this.cast(unimplemented(service, method));
    // Only Range and Txn requests carry enums (sort options, compares); the rest go through untouched.
    const req = method === 'range' || method === 'txn' ? enumsIn(payload ?? {}) : (payload ?? {});
    // etcd3 sends Authenticate itself without a token; everything else carries the caller's.
    const call = async (): Promise<unknown> => {
      const ctx = service === 'Auth' && method === 'authenticate' ? {} : await this.context();
      try {
        return permsOut(eventsOut((fn as (req: unknown, ctx: CallContext) => object).call(svc, req, ctx)));
      } catch (err) {
        throw this.cast(err instanceof Error ? err : new Error(String(err)));
      }
    };
    try {
      return await call();
    } catch (err) {
      if (this.credentials === undefined || !isInvalidToken(err)) throw err;
      this.token = undefined; // etcd3: invalidateMetadata(), then the call again
      return call();
    }
  }

  async withConnection<R>(service: string, fn: (args: { resource: unknown; client: unknown; metadata: unknown }) => R | Promise<R>): Promise<R> {
    if (service !== 'Watch' && service !== 'Lease') throw this.cast(unimplemented(service, 'stream'));
    const ctx = await this.context();
    const client = {
      watch: () => new SimDuplex(this.services.watch.watch(ctx), this.cast, enumsIn, (r) => eventsOut(r as { events?: unknown })),
      leaseKeepAlive: () => new SimDuplex(this.services.lease.leaseKeepAlive(ctx), this.cast, identity, identity),
    };
    return fn({ resource: RESOURCE, client, metadata: METADATA });
  }

  markFailed(): void {}
}

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

/** Options of `sim.etcd3()`: etcd3's own options, minus the hosts (there is no network). */
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
