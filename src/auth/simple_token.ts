/**
 * etcd's simple tokens (server/auth/simple_token.go): `<16 random letters>.<raft index>`, opaque to the
 * client, valid for a TTL (--auth-token-ttl, 300 s) that every successful use renews. Expiry follows the
 * simulator's clock; it is checked when a token is used (etcd sweeps once a second, so a real etcd may
 * accept a token up to 1 s past its deadline). Deleting a user or changing its password drops its tokens;
 * disabling auth drops them all.
 */
import type { Clock, SimRandom } from '../sim/index.js';

/**
 * What AuthStore needs of a token kind (etcd's TokenProvider): simple tokens here, JWTs in jwt_token.ts
 * (made by whoever starts the member: that module needs Node's crypto, which the browser build has not).
 * @public
 */
export interface TokenProvider {
  /** `prefix`: a simple token's random part, drawn by the member that proposed the Authenticate. */
  assign(user: string, index: number, revision: number, prefix?: string): string;
  /** The user a valid token names, and for a JWT the auth revision it was issued at. */
  info(token: string): { readonly user: string; readonly revision?: number | undefined } | undefined;
  invalidateUser(user: string): void;
  clear(): void;
  /** Tokens held (a stateless kind holds none). */
  readonly size: number;
}

/** Makes a member's token provider on its clock. @public */
export type TokenProviderFactory = (clock: Clock) => TokenProvider;

const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
const TOKEN_PREFIX_LENGTH = 16;
export const DEFAULT_TOKEN_TTL_MS = 300_000;

export class SimpleTokens implements TokenProvider {
  private readonly tokens = new Map<string, { user: string; deadline: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly random: SimRandom,
    readonly ttlMs = DEFAULT_TOKEN_TTL_MS,
  ) {
    if (!(ttlMs > 0)) throw new RangeError(`auth: token TTL must be > 0 ms, got ${ttlMs}`);
  }

  /** Issues a token for `user` (index: the raft index of the Authenticate request; a simple token carries no auth revision). */
  assign(user: string, index: number, _revision?: number, drawn?: string): string {
    const prefix = drawn ?? this.prefix();
    const token = `${prefix}.${index}`;
    this.tokens.set(token, { user, deadline: this.clock.now() + this.ttlMs });
    return token;
  }

  /** A token's random part (etcd's GenTokenPrefix). */
  prefix(): string {
    let prefix = '';
    for (let i = 0; i < TOKEN_PREFIX_LENGTH; i++) prefix += LETTERS[this.random.nextInt(0, LETTERS.length - 1)];
    return prefix;
  }

  /** The user a live token belongs to (renewing it), or undefined when unknown or expired. */
  info(token: string): { readonly user: string; readonly revision?: number | undefined } | undefined {
    const t = this.tokens.get(token);
    if (t === undefined) return undefined;
    const now = this.clock.now();
    if (now > t.deadline) {
      this.tokens.delete(token);
      return undefined;
    }
    t.deadline = now + this.ttlMs;
    return { user: t.user };
  }

  /** Drops one token (the shadow's simulator, whose clock never moves, drops those the real etcd dropped). */
  revoke(token: string): void {
    this.tokens.delete(token);
  }

  invalidateUser(user: string): void {
    for (const [token, t] of this.tokens) if (t.user === user) this.tokens.delete(token);
  }

  clear(): void {
    this.tokens.clear();
  }

  /** Number of tokens held (expired ones not yet looked up included). */
  get size(): number {
    return this.tokens.size;
  }
}
