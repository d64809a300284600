/**
 * Passwords as etcd keeps them: a bcrypt hash (golang.org/x/crypto/bcrypt's GenerateFromPassword, text
 * `$2a$<cost>$<22 salt chars><31 hash chars>`) stored in the user's record, checked with
 * CompareHashAndPassword. The hash is the one stored in a snapshot's authUsers bucket, so a real etcd
 * restored from a simulator's snapshot authenticates its users, and a real etcd's users authenticate here.
 *
 * The cost is etcd's --bcrypt-cost (4..31; etcd's default is 10, ~70 ms a hash in JavaScript); the
 * simulator's default is bcrypt's minimum, 4 (~1 ms), so tests do not pay etcd's price — the hashes are
 * still real bcrypt, which etcd checks whatever their cost. Salts come from the member's seeded random
 * source, so the same seed gives the same hashes.
 *
 * bcryptjs computes the hash (pure JavaScript, also in the browser bundle); what a hash text may look like
 * is decided here, as x/crypto's newFromHash decides it, so a hash etcd could not read fails as etcd fails
 * it: the password is wrong (etcd's `authentication failed, invalid user ID or password`), never an error.
 */
import bcrypt from 'bcryptjs';
import type { SimRandom } from '../sim/index.js';

/**
 * A stored password hash: the bytes of etcd's authpb.User.password, one character per byte (latin1), so a
 * hash loaded from a snapshot is kept byte for byte even when it is not one bcrypt can read.
 * @public
 */
export type PasswordHash = string;

/** bcrypt.MinCost and bcrypt.MaxCost (etcd's --bcrypt-cost range). */
export const BCRYPT_MIN_COST = 4;
export const BCRYPT_MAX_COST = 31;
/** The simulator's default cost: bcrypt's minimum (etcd's own default is 10). */
export const DEFAULT_HASH_COST = BCRYPT_MIN_COST;

/** x/crypto/bcrypt's minHashSize, encodedSaltSize and its base64 alphabet. */
const MIN_HASH_SIZE = 59;
const SALT_CHARS = 22;
const BCRYPT_ALPHABET = /^[./A-Za-z0-9]*$/;

/** Hashes and checks passwords with one member's cost and salt source. */
export class PasswordHasher {
  constructor(
    private readonly random: SimRandom,
    readonly cost = DEFAULT_HASH_COST,
  ) {
    if (!Number.isInteger(cost) || cost < BCRYPT_MIN_COST || cost > BCRYPT_MAX_COST) {
      throw new RangeError(`auth: bcrypt cost must be ${BCRYPT_MIN_COST}..${BCRYPT_MAX_COST}, got ${cost}`);
    }
  }

  /** GenerateFromPassword: a `$2a$` hash with a fresh 16-byte salt. */
  hash(password: string): PasswordHash {
    const salt = Array.from({ length: 16 }, () => this.random.nextInt(0, 255));
    return bcrypt.hashSync(password, `$2a$${String(this.cost).padStart(2, '0')}$${bcrypt.encodeBase64(salt, 16)}`);
  }

  /** CompareHashAndPassword: whether `password` is the one `hash` was made from (false for a hash etcd cannot read). */
  verify(password: string, hash: PasswordHash): boolean {
    return checkBcrypt(password, hash);
  }
}

/** A bcrypt hash text as x/crypto's newFromHash splits it, or a reason it cannot. */
export function parseBcryptHash(hash: PasswordHash): { readonly cost: number; readonly salt: string; readonly hash: string } | string {
  if (hash.length < MIN_HASH_SIZE) return 'hash too short';
  if (hash[0] !== '$') return `invalid hash prefix ${JSON.stringify(hash[0])}`;
  if (hash[1]! > '2') return `hash version ${JSON.stringify(hash[1])} too new`;
  // `$2$` or `$2<minor>$`; the minor letter does not change the hash.
  let i = hash[2] === '$' ? 3 : 4;
  // decodeCost: strconv.Atoi of two characters (a sign allowed), then the range check; the third is skipped unread.
  const costText = hash.slice(i, i + 2);
  if (!/^[+-]?\d+$/.test(costText)) return `cost ${JSON.stringify(costText)} is not a number`;
  const cost = Number(costText);
  if (cost < BCRYPT_MIN_COST || cost > BCRYPT_MAX_COST) return `cost ${cost} is outside ${BCRYPT_MIN_COST}..${BCRYPT_MAX_COST}`;
  i += 3;
  const salt = hash.slice(i, i + SALT_CHARS);
  const rest = hash.slice(i + SALT_CHARS);
  // The salt is base64-decoded before hashing (an error fails the comparison); the hash part is compared as text.
  if (!BCRYPT_ALPHABET.test(salt)) return 'salt is not bcrypt base64';
  return { cost, salt, hash: rest };
}

function checkBcrypt(password: string, stored: PasswordHash): boolean {
  const p = parseBcryptHash(stored);
  if (typeof p === 'string') return false;
  const computed = bcrypt.hashSync(password, `$2a$${String(p.cost).padStart(2, '0')}$${p.salt}`);
  return constantTimeEqual(computed.slice(-31), p.hash);
}

/** subtle.ConstantTimeCompare of two texts: equal length and content, in time independent of where they differ. */
function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
