/**
 * The simulator's digest of a store's history, for tests that assert "nothing changed": FNV-1a over every
 * stored revision up to a revision, in key order then revision order, plus the compaction revision (which
 * etcd's own HashKV value leaves out — that one is hash_kv.ts).
 */
import type { Storage } from './store.js';

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function mixBytes(h: number, bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i]!, FNV_PRIME);
  return h;
}

function mixNumber(h: number, n: number): number {
  // Two 32-bit halves: revisions stay below 2^53.
  h = Math.imul(h ^ (n >>> 0), FNV_PRIME);
  return Math.imul(h ^ Math.floor(n / 0x100000000), FNV_PRIME);
}

export function historyDigest(s: Storage, revision: number): number {
  let h = mixNumber(FNV_OFFSET, s.compactRev);
  s.index.forEachRevs((_key, _keyBytes, revs) => {
    for (const kv of revs) {
      if (kv.modRevision > revision) break; // revisions are in order
      h = mixBytes(h, kv.key);
      h = mixNumber(h, kv.key.length);
      h = mixNumber(h, kv.modRevision);
      h = mixNumber(h, kv.createRevision);
      h = mixNumber(h, kv.version);
      h = mixBytes(h, kv.value);
      h = mixNumber(h, kv.value.length);
      h = mixNumber(h, Number(kv.lease & 0xffffffffn));
      h = mixNumber(h, Number(kv.lease >> 32n));
    }
  });
  return h >>> 0;
}
