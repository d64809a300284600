/** What the cluster tests share: outcomes of calls that may fail while virtual time moves. */
import assert from 'node:assert/strict';
import type { GrpcError } from '../../src/index.js';

/** Watches a call's outcome from the start (it may fail while time is moved, before anyone awaits it). */
export function caught<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

/** The gRPC code and details a call was refused with (fails the test if it was answered). */
export async function rejection(p: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as GrpcError;
    return { code: e.code, details: e.details };
  }
  assert.fail('expected a rejection');
}

/** The gRPC code and details a synchronous call threw (fails the test if it returned). */
export function thrown(fn: () => unknown): { code: number; details: string } {
  try {
    fn();
  } catch (err) {
    const e = err as GrpcError;
    return { code: e.code, details: e.details };
  }
  assert.fail('expected an error');
}
