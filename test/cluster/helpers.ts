/** What the cluster tests share: outcomes of calls that may fail while virtual time moves. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
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

/** What one etcdctl run printed, and its exit status. */
export interface Ctl {
  code: number;
  out: string;
  err: string;
}

/** etcdctl (API 3) against `endpoints` (host:port list), with its dial timeout and a 5 s command timeout. */
export function etcdctl(endpoints: readonly string[], args: readonly string[], dialTimeout = '3s'): Promise<Ctl> {
  return new Promise((resolve, reject) => {
    const child = spawn('etcdctl', [`--endpoints=${endpoints.join(',')}`, `--dial-timeout=${dialTimeout}`, '--command-timeout=5s', ...args], {
      env: { ...process.env, ETCDCTL_API: '3' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, out, err }));
  });
}
