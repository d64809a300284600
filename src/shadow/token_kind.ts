/**
 * The simulator's auth tokens are of the kind the real etcd's are. etcd issues simple tokens (`--auth-token
 * simple`, its default: opaque, held in the member's memory, valid for --auth-token-ttl after their last use,
 * all dropped when auth is turned off) or JWTs (`--auth-token jwt,...`: signed claims of the user, the auth
 * revision they were issued at and an expiry, `exp`; valid until then however often or seldom they are used,
 * kept across auth turned off and on, and refused by every key-permission check once an auth change moved the
 * auth store's revision past theirs — etcd's ErrAuthOldRevision, "etcdserver: revision of auth store is old").
 * Observed on etcd 3.4.23 (test/shadow/jwt.test.ts).
 *
 * The shadow cannot sign etcd's JWTs (it has not etcd's key) and need not: for each Authenticate whose etcd
 * token is a JWT the simulator issues a JWT of its own (src/auth/jwt_token.ts, signed with a key of the
 * shadow's), naming the user and the simulator's auth revision, which follows etcd's — so an auth change makes
 * both refuse the old token alike. Its expiry is never reached (the simulator's clock never moves): etcd's
 * decides, as for simple tokens (context.ts, TokenMap: a JWT pair is kept until etcd's `exp`, not dropped for
 * want of use). Any other Authenticate, and the shadow's own root token (follower.ts), get simple tokens.
 */
import { Buffer } from 'node:buffer';
import jwt from 'jsonwebtoken';
import { SimpleTokens, type TokenProvider } from '../auth/index.js';
import { SimRandom, type Clock } from '../sim/index.js';

/** jwt_token.ts's JwtTokens, loaded by the caller (a dynamic import: the module loads node:crypto). */
export type JwtTokensClass = new (clock: Clock, opts: { signMethod: 'HS256'; privateKey: Buffer; ttlMs: number }) => TokenProvider;

/** The simulator's JWTs never leave the shadow: any secret of its own signs them. */
const SECRET = Buffer.from('etcdsim shadow: the simulator signs its own JWTs');

/** A JWT's three parts (header, claims, signature: base64url); a simple token is `<16 letters>.<index>`. */
const JWT_FORM = /^[\w-]+\.[\w-]+\.[\w-]*$/;

/** etcd's JWT expiry (`exp`, Unix seconds) in ms; undefined for a token that is not a JWT (a simple token). */
export function jwtExpiryMs(token: string): number | undefined {
  const claims = jwt.decode(token, { json: true });
  return claims !== null && typeof claims.exp === 'number' ? claims.exp * 1000 : undefined;
}

/** Simple tokens, but a JWT for an Authenticate asked inside `jwtNext` (an etcd that issued a JWT for it). */
export class FollowingTokens extends SimpleTokens {
  private readonly jwts: TokenProvider;
  private jwtNow = false;

  constructor(clock: Clock, Jwt: JwtTokensClass) {
    super(clock, new SimRandom(1).fork('shadow-token'));
    this.jwts = new Jwt(clock, { signMethod: 'HS256', privateKey: SECRET, ttlMs: 300_000 });
  }

  /** `fn` (an Authenticate asked of the simulator) issues a JWT. */
  jwtNext<T>(fn: () => T): T {
    this.jwtNow = true;
    try {
      return fn();
    } finally {
      this.jwtNow = false;
    }
  }

  override assign(user: string, index: number, revision?: number, drawn?: string): string {
    return this.jwtNow ? this.jwts.assign(user, index, revision ?? 0) : super.assign(user, index, revision, drawn);
  }

  override info(token: string): { readonly user: string; readonly revision?: number | undefined } | undefined {
    return JWT_FORM.test(token) ? this.jwts.info(token) : super.info(token);
  }
}
