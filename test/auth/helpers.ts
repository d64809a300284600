/** Shared by the auth tests. */
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import type { EtcdErrorKind } from '../../src/etcd/index.js';

export const b = (s: string): Buffer => Buffer.from(s);

/** Asserts that `fn` throws etcd's error `kind` in gRPC form (its code and exact details). */
export function rejects(fn: () => unknown, kind: EtcdErrorKind): void {
  assert.throws(fn, (err: Error & { code?: number; details?: string }) => {
    assert.equal(err.details, kind.message);
    assert.equal(err.code, kind.code);
    return true;
  });
}
