/**
 * A served simulator (etcd 3.4's profile) and a real etcd 3.4.23 side by side for one test file, started
 * before its tests and stopped after them: the raw-socket tests of the client port send each input to both
 * and compare. Outside CI, without `etcd` on PATH, the etcd half is left out (`etcd()` is undefined).
 */
import { after, before } from 'node:test';
import { startEtcd, type EtcdProcess } from '../../src/diff/etcd_process.js';
import { serve, type ServeHandle } from '../../src/grpc/server.js';
import { requireCommand } from '../support/prerequisites.js';

export interface BesideEtcd {
  sim(): ServeHandle;
  etcd(): EtcdProcess | undefined;
}

export function simBesideEtcd(): BesideEtcd {
  let sim: ServeHandle | undefined;
  let etcd: EtcdProcess | undefined;
  before(async () => {
    [sim, etcd] = await Promise.all([serve({ port: 0, etcdVersion: '3.4' }), requireCommand('etcd') === false ? startEtcd() : undefined]);
  });
  after(async () => {
    await Promise.all([sim?.close(), etcd?.stop()]);
  });
  return { sim: () => sim!, etcd: () => etcd };
}
