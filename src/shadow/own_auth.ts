/**
 * The shadow's own user on an etcd with auth on (`etcdsim shadow --user NAME:PASSWORD`, etcdctl's flags).
 * etcd's auth covers the shadow's own calls as any client's: the Snapshot that seeds the simulator (etcd
 * 3.4.23 lets only the root role take one: "auth: user name is empty" without a token, "auth: permission
 * denied" for any other user), the watch of every key that brings the revisions no answer accounts for, and
 * the compaction probe's reads. Those calls carry the token of an Authenticate as that user.
 *
 * A token stops being good while the shadow does nothing wrong: etcd's simple tokens expire after
 * --auth-token-ttl seconds unused (300 by default; the probe reads every 10 s, drained() whenever it is
 * asked), and turning auth off drops every token. etcd then answers "etcdserver: invalid auth token" (or
 * "revision of auth store is old" for a call that raced an auth change): the shadow authenticates again and
 * retries the call once — the errors on which clientv3 fetches a new token too. With auth off, Authenticate
 * is refused ("authentication is not enabled") and the calls go without a token; once auth is on again, a
 * call without one is refused ("user name is empty") and the shadow authenticates. A watch keeps the token
 * it was opened with: etcd checks it when the watch is created (observed with 3.4.23: a watch goes on
 * streaming after its token expired, and after auth was turned off and on).
 */
import type { EtcdGrpcClient } from '../grpc/index.js';

/** The user the shadow authenticates as. */
export interface ShadowUser {
  readonly name: string;
  readonly password: string;
}

/** etcd's refusals of a call whose token is missing or no longer good: authenticate and try again. */
const STALE_TOKEN = /^(etcdserver|auth): (invalid auth token|revision of auth store is old|user name is empty)$/;
/** Authenticate's refusal while auth is off: the calls go without a token. */
const AUTH_OFF = 'etcdserver: authentication is not enabled';

/** A gRPC error's message as etcd wrote it. */
export function errorDetails(err: unknown): string {
  const d = (err as { details?: unknown }).details;
  return typeof d === 'string' ? d : err instanceof Error ? err.message : String(err);
}

export class OwnAuth {
  /** The token calls carry now; undefined: none (auth off, or not yet authenticated). */
  private token: string | undefined;
  private authenticating: Promise<string | undefined> | undefined;
  private authenticated = false;
  /** Authenticate calls answered with a token (1 after the start; one more each time etcd refused the token). */
  authentications = 0;

  constructor(
    private readonly client: EtcdGrpcClient,
    /** undefined: the shadow has no user, and its calls go without a token. */
    readonly user: ShadowUser | undefined,
  ) {}

  /** The call options of the shadow's own calls: its token, once authenticated. */
  async options(): Promise<{ token: string } | undefined> {
    if (this.user !== undefined && !this.authenticated) await this.authenticate();
    return this.token === undefined ? undefined : { token: this.token };
  }

  /** Runs `call` with the shadow's token; authenticates again and retries once when etcd refused the token. */
  async call<T>(call: (o: { token: string } | undefined) => Promise<T>): Promise<T> {
    const used = await this.options();
    try {
      return await call(used);
    } catch (err) {
      if (this.user === undefined || !STALE_TOKEN.test(errorDetails(err))) throw err;
      // Another call may have authenticated again meanwhile: only a token still the one refused is dropped.
      if (this.token === used?.token) this.authenticated = false;
      return call(await this.options());
    }
  }

  /** One Authenticate at a time: calls refused together wait for the same new token. */
  private authenticate(): Promise<string | undefined> {
    const user = this.user!;
    this.authenticating ??= this.client.auth
      .authenticate({ name: user.name, password: user.password })
      .then(
        (r) => {
          this.authentications++;
          return r.token;
        },
        (err: unknown) => {
          if (errorDetails(err) === AUTH_OFF) return undefined;
          throw new Error(`--user ${user.name}: ${errorDetails(err)}`);
        },
      )
      .then((token) => {
        this.token = token;
        this.authenticated = true;
        return token;
      })
      .finally(() => (this.authenticating = undefined));
    return this.authenticating;
  }
}
