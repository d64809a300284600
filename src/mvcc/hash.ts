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
  // Read from the records, not from KeyValues built for the purpose: the cluster checker digests every
  // member's store after each apply.
  const hist = s.history;
  s.index.forEachRecords((_key, _keyBytes, records) => {
    for (const r of records) {
      const modRevision = hist.modRevision(r);
      if (modRevision > revision) break; // revisions are in order
      const key = hist.key(r);
      const value = hist.value(r);
      const lease = hist.lease(r);
      h = mixBytes(h, key);
      h = mixNumber(h, key.length);
      h = mixNumber(h, modRevision);
      h = mixNumber(h, hist.createRevision(r));
      h = mixNumber(h, hist.version(r));
      h = mixBytes(h, value);
      h = mixNumber(h, value.length);
      h = mixNumber(h, Number(lease & 0xffffffffn));
      h = mixNumber(h, Number(lease >> 32n));
    }
  });
  return h >>> 0;
}
