/**
 * The browser's stand-in for src/sim/crypto_platform.ts (Node's crypto): the playground bundle resolves that
 * module to this one. The engine hashes synchronously (auth's password digests, member IDs, the snapshot
 * stream's checksum) and the browser's Web Crypto is asynchronous only, so the digests come from
 * @noble/hashes, which computes them synchronously in plain JavaScript.
 */
import { pbkdf2 } from '@noble/hashes/pbkdf2.js';
import { sha1 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { Buffer } from './bytes_platform.js';

const bytesOf = (v: string | Uint8Array): Uint8Array => (typeof v === 'string' ? Buffer.from(v, 'utf8') : v);

const DIGESTS = { sha256, sha1 } as const;

/** createHash('sha256' | 'sha1'): update with strings (UTF-8) or bytes, then digest() the bytes. */
export function createHash(algorithm: string): { update(v: string | Uint8Array): ReturnType<typeof createHash>; digest(): Buffer } {
  if (algorithm !== 'sha256' && algorithm !== 'sha1') throw new Error(`playground: only sha256 and sha1 are available, not ${algorithm}`);
  const h = DIGESTS[algorithm].create();
  const hash = {
    update(v: string | Uint8Array) {
      h.update(bytesOf(v));
      return hash;
    },
    digest: () => Buffer.from(h.digest()),
  };
  return hash;
}

/** pbkdf2Sync with HMAC-SHA-256 (the only digest the engine asks for). */
export function pbkdf2Sync(password: string | Uint8Array, salt: string | Uint8Array, iterations: number, keylen: number, digest: string): Buffer {
  if (digest !== 'sha256') throw new Error(`playground: only sha256 is available, not ${digest}`);
  return Buffer.from(pbkdf2(sha256, bytesOf(password), bytesOf(salt), { c: iterations, dkLen: keylen }));
}

/** Equality of two byte strings of one length, looking at every byte (as Node's). */
export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) throw new RangeError('Input buffers must have the same byte length');
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
  return d === 0;
}
