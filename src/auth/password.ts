/**
 * Password hashing. etcd stores bcrypt hashes (--bcrypt-cost, default 10), which costs tens of ms per
 * user add and authenticate — a cost tests need not pay. The simulator keeps etcd's behaviour (only the
 * hash is stored; a wrong password fails) with a configurable cost: 0 (the default) is one salted
 * SHA-256, a cost c ≥ 4 is PBKDF2-SHA256 with 2^c iterations, bcrypt-like in how time grows with c.
 */
import { createHash, pbkdf2Sync, timingSafeEqual } from '../sim/crypto_platform.js';
import type { SimRandom } from '../sim/index.js';

export interface PasswordHash {
  readonly cost: number;
  readonly salt: string;
  readonly digest: Buffer;
}

export class PasswordHasher {
  constructor(
    private readonly random: SimRandom,
    readonly cost = 0,
  ) {
    if (!Number.isInteger(cost) || (cost !== 0 && (cost < 4 || cost > 31))) {
      throw new RangeError(`auth: hash cost must be 0 (fast) or 4..31 (bcrypt-like), got ${cost}`);
    }
  }

  hash(password: string): PasswordHash {
    const salt = this.random.nextUint63().toString(36);
    return { cost: this.cost, salt, digest: digest(password, salt, this.cost) };
  }

  verify(password: string, h: PasswordHash): boolean {
    const d = digest(password, h.salt, h.cost);
    return d.length === h.digest.length && timingSafeEqual(d, h.digest);
  }
}

function digest(password: string, salt: string, cost: number): Buffer {
  if (cost === 0) return createHash('sha256').update(salt).update('\0').update(password).digest();
  return pbkdf2Sync(password, salt, 2 ** cost, 32, 'sha256');
}
