import { Buffer } from 'node:buffer';
import assert from 'node:assert/strict';
import { createEtcdSim, type EtcdSim, type EtcdSimOptions, type GrpcError } from '../../src/index.js';
import type { messages as M } from '../../src/index.js';

export const B = (s: string): Buffer => Buffer.from(s, 'utf8');

/** A sim with fixed, recognisable identity so whole responses can be compared. */
export function newSim(opts: EtcdSimOptions = {}): EtcdSim {
  return createEtcdSim({ time: 'virtual', clusterId: 11n, memberId: 22n, raftTerm: 3, ...opts });
}

export function hdr(revision: number | string): M.ResponseHeader {
  return { cluster_id: '11', member_id: '22', revision: String(revision), raft_term: '3' };
}

export function inner(revision: number | string): M.ResponseHeader {
  return { cluster_id: '0', member_id: '0', revision: String(revision), raft_term: '0' };
}

export function kv(key: string, create: number, mod: number, version: number, value: string, lease = '0'): M.KeyValue {
  return {
    key: B(key),
    create_revision: String(create),
    mod_revision: String(mod),
    version: String(version),
    value: B(value),
    lease,
  };
}

/** Asserts `fn` throws a grpc-js-shaped error with this code and details. */
export function assertGrpcError(fn: () => unknown, code: number, details: string, name: string): void {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof Error, 'expected an error');
  const e = caught as GrpcError;
  assert.equal(e.constructor, Error);
  assert.equal(Object.getPrototypeOf(e), Error.prototype);
  assert.equal(e.code, code);
  assert.equal(e.details, details);
  assert.equal(e.message, `${code} ${name}: ${details}`);
  assert.deepEqual(e.metadata.get('anything'), []);
}
