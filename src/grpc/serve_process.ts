/**
 * A member of a cluster of processes (src/peer/process_member.ts) on its client port: serve()'s port, door
 * and handler table — the single member's path — over the member's services (src/peer/process_services.ts),
 * whose writes answer once the member applied them and whose linearizable reads wait for ReadIndex. /health
 * is etcd's check on a cluster member: no leader, or a read through Raft not back within a second, is 503.
 */
import { hostMicrotask } from '../sim/index.js';
import { createClientHttp, type ClientHttp } from '../http/index.js';
import { NONE } from '../raft/index.js';
import { grpcError, type MemberView } from '../server/index.js';
import { GrpcCode } from '../etcd/index.js';
import { processServices, type ProcessMember } from '../peer/index.js';
import { serveMember, type ServeHandle, type ServeOptions } from './server.js';
import { HEALTH_PROBE_MS, clusterHealth } from './serve_cluster.js';
import type { AttachedMember } from './attached_member.js';

/**
 * Binds the client port, then starts the member with the port's endpoint (`start`), and serves it. The
 * member is its maker's to stop; the handle's close() stops the port.
 */
export async function serveProcessMember(opts: ServeOptions, start: (endpoint: string) => Promise<ProcessMember>): Promise<{ handle: ServeHandle; member: ProcessMember }> {
  let member: ProcessMember | undefined;
  const handle = await serveMember(opts, async (endpoint) => {
    member = await start(endpoint);
    return attachedProcessMember(member);
  });
  return { handle, member: member! };
}

/** The member as the doors take it: its services, its token waits, its HTTP side. */
function attachedProcessMember(pm: ProcessMember): AttachedMember {
  const server = pm.server;
  server.delivery.setScheduler((flush) => hostMicrotask(flush));
  const member: MemberView = {
    etcdVersion: server.etcdVersion,
    services: processServices(pm),
    tokenWaitIndex: (ctx) => server.tokenWaitIndex(ctx),
    appliedWait: server.appliedWait,
  };
  const http = createClientHttp(server, () => member);
  const probe = (): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const timer = server.clock.setTimer(server.clock.now() + HEALTH_PROBE_MS, () => reject(grpcError(GrpcCode.DEADLINE_EXCEEDED, 'context deadline exceeded')), 'peer.health');
      pm.linearizableRead().then(
        (v) => {
          server.clock.cancel(timer);
          resolve(v);
        },
        (err: unknown) => {
          server.clock.cancel(timer);
          reject(err);
        },
      );
    });
  const port: ClientHttp = {
    handle(req, res) {
      const target = req.url ?? '/';
      const q = target.indexOf('?');
      const path = q < 0 ? target : target.slice(0, q);
      if (path === '/health' && req.method === 'GET') {
        return clusterHealth(server, new URLSearchParams(q < 0 ? '' : target.slice(q + 1)), res, pm.leader !== NONE, probe, () => http.handle(req, res));
      }
      http.handle(req, res);
    },
    close() {
      http.close();
    },
  };
  return { member, server, http: port };
}
