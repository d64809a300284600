/**
 * etcd's JWT tokens (`--auth-token jwt,pub-key=FILE,priv-key=FILE,sign-method=METHOD,ttl=DURATION`): a token is
 * a JWT whose claims are the user name, the auth revision it was issued at and its expiry (`exp`, Unix
 * seconds, now + ttl; 5 minutes by default), signed with the private key (HS methods: with the priv-key
 * file's bytes as the secret). Unlike simple tokens they are stateless: a token stays valid until it expires
 * (deleting the user or changing the password does not revoke it; the permission checks then refuse it, and
 * one issued before an auth change is refused with ErrAuthOldRevision). With only a public key the member
 * verifies tokens but cannot issue them (etcd's ErrVerifyOnly). Expiry is read on the simulator's clock.
 *
 * Signing and verifying use the jsonwebtoken library (RS256/384/512, PS256/384/512, ES256/384/512,
 * HS256/384/512, as etcd's golang-jwt offers).
 */
import { readFileSync } from 'node:fs';
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { Clock } from '../sim/index.js';
import type { TokenProvider } from './simple_token.js';

export const JWT_SIGN_METHODS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'HS256', 'HS384', 'HS512'] as const;
export type JwtSignMethod = (typeof JWT_SIGN_METHODS)[number];

/** The parsed `--auth-token jwt,...` options. */
export interface JwtTokenOptions {
  readonly signMethod: JwtSignMethod;
  /** PEM (RS/PS/ES) or the secret's bytes (HS). */
  readonly privateKey?: Buffer | undefined;
  readonly publicKey?: Buffer | undefined;
  readonly ttlMs: number;
}

/** etcd's DefaultTTL of JWT tokens. */
const DEFAULT_JWT_TTL_MS = 5 * 60_000;

/** Why `--auth-token` options are refused (etcd logs the reason, then stops with "auth: invalid auth options"). */
export class AuthTokenOptionsError extends Error {}

/**
 * Reads `jwt,key=value,...` as etcd's jwtOptions.Parse does: ttl a Go duration, the key files read, a known
 * sign method required; then the keys checked as etcd's Key() checks them. Throws AuthTokenOptionsError.
 */
export function parseJwtOptions(options: ReadonlyMap<string, string>, parseDuration: (s: string) => number): JwtTokenOptions {
  const ttl = options.get('ttl');
  let ttlMs = DEFAULT_JWT_TTL_MS;
  if (ttl !== undefined && ttl !== '') {
    try {
      ttlMs = parseDuration(ttl);
    } catch {
      throw new AuthTokenOptionsError(`problem loading JWT options: time: invalid duration ${JSON.stringify(ttl)}`);
    }
  }
  const read = (key: string): Buffer | undefined => {
    const file = options.get(key);
    if (file === undefined || file === '') return undefined;
    try {
      return readFileSync(file);
    } catch (err) {
      const code = (err as { code?: string }).code;
      throw new AuthTokenOptionsError(`problem loading JWT options: open ${file}: ${code === 'ENOENT' ? 'no such file or directory' : code === 'EISDIR' ? 'is a directory' : String(code)}`);
    }
  };
  const publicKey = read('pub-key');
  const privateKey = read('priv-key');
  const method = options.get('sign-method') ?? '';
  if (!(JWT_SIGN_METHODS as readonly string[]).includes(method)) throw new AuthTokenOptionsError('problem loading JWT options: auth: invalid auth signature method');
  const signMethod = method as JwtSignMethod;
  if (signMethod.startsWith('HS')) {
    if (privateKey === undefined || privateKey.length === 0) throw new AuthTokenOptionsError('auth: missing key data');
  } else {
    if (privateKey === undefined && publicKey === undefined) throw new AuthTokenOptionsError('auth: missing key data');
    try {
      if (privateKey !== undefined) createPrivateKey(privateKey);
      if (publicKey !== undefined) createPublicKey(publicKey);
    } catch {
      throw new AuthTokenOptionsError(signMethod.startsWith('ES') ? 'Invalid Key: Key must be PEM encoded PKCS1 or PKCS8 private key' : 'Invalid Key: Key must be PEM encoded PKCS1 or PKCS8 private key');
    }
  }
  return { signMethod, privateKey, publicKey, ttlMs };
}

/** What a token names: the user, and the auth revision it was issued at. */
export interface TokenInfo {
  readonly user: string;
  readonly revision?: number | undefined;
}

/** etcd's ErrVerifyOnly: a member given only a public key cannot sign. */
export class JwtVerifyOnlyError extends Error {}

export class JwtTokens implements TokenProvider {
  private readonly signKey: KeyObject | Buffer | undefined;
  private readonly verifyKey: KeyObject | Buffer;

  constructor(
    private readonly clock: Clock,
    private readonly opts: JwtTokenOptions,
  ) {
    if (opts.signMethod.startsWith('HS')) {
      this.signKey = opts.privateKey;
      this.verifyKey = opts.privateKey!;
    } else {
      this.signKey = opts.privateKey === undefined ? undefined : createPrivateKey(opts.privateKey);
      this.verifyKey = this.signKey !== undefined ? createPublicKey(this.signKey) : createPublicKey(opts.publicKey!);
    }
  }

  get ttlMs(): number {
    return this.opts.ttlMs;
  }

  assign(user: string, _index: number, revision: number): string {
    if (this.signKey === undefined) throw new JwtVerifyOnlyError('auth: token signing attempted with verify-only key');
    const exp = Math.floor((this.clock.now() + this.opts.ttlMs) / 1000);
    return jwt.sign({ exp, revision, username: user }, this.signKey, { algorithm: this.opts.signMethod, noTimestamp: true });
  }

  info(token: string): TokenInfo | undefined {
    try {
      // Expiry is read here, on the simulator's clock: jsonwebtoken reads the host's clock when the time it is
      // given is 0 — where a virtual clock starts — so every token looked expired there.
      const claims = jwt.verify(token, this.verifyKey, { algorithms: [this.opts.signMethod], ignoreExpiration: true });
      if (typeof claims !== 'object' || typeof claims['username'] !== 'string' || typeof claims['revision'] !== 'number') return undefined;
      if (typeof claims.exp === 'number' && Math.floor(this.clock.now() / 1000) >= claims.exp) return undefined;
      return { user: claims['username'], revision: claims['revision'] };
    } catch {
      return undefined;
    }
  }

  /** JWTs are not revocable: nothing to drop. */
  invalidateUser(_user: string): void {}

  clear(): void {}

  get size(): number {
    return 0;
  }
}
