/**
 * The hashes the engine needs (SHA-256 for auth's password digests and the snapshot stream's checksum, SHA-1 for member IDs,
 * PBKDF2 for a bcrypt-like cost), behind one module so the browser build can swap Node's crypto: the
 * playground bundle (scripts/build.mjs) resolves this file to src/playground/browser/crypto_platform.ts.
 */
export { createHash, pbkdf2Sync, timingSafeEqual } from 'node:crypto';
