/**
 * One member of the simulated cluster as every front door takes a member (src/server/member_view.ts): the
 * gRPC door of its client port, the JSON gateway, the in-process clients. Its services are the member's
 * ClusterMemberServices (services.ts: writes through Raft, ReadIndex for linearizable reads, over one
 * client's link; membership changes as Raft conf changes, membership.ts). The simple-token wait happens inside the services (each call waits for its token's raft index on the member
 * it reaches), so the doors hold nothing themselves.
 */
import type { EtcdVersion } from '../etcd/index.js';
import type { CallContext, MemberServices, MemberView } from '../server/index.js';
import type { ClusterMemberServices } from './services.js';

/** The member view of one client's connection to one cluster member. */
export class ClusterMemberView implements MemberView {
  readonly services: MemberServices;

  constructor(readonly connection: ClusterMemberServices) {
    const s = connection;
    this.services = {
      kv: s.kv,
      watch: { watch: (ctx?: CallContext) => s.watch(ctx) },
      lease: s.lease,
      cluster: s.cluster,
      maintenance: s.maintenance,
      auth: s.auth,
      // etcd's v3lock / v3election servers of this member: their requests are the member's own, through Raft.
      lock: s.lock,
      election: s.election,
    };
  }

  /** The release the member follows now (a restart builds its engine again, on the same release). */
  get etcdVersion(): EtcdVersion {
    return this.connection.member.server.etcdVersion;
  }

  /** Undefined: the member's services hold a call whose token it has not applied yet (services.ts's send). */
  tokenWaitIndex(): bigint | undefined {
    return undefined;
  }

  get appliedWait(): MemberView['appliedWait'] {
    return this.connection.member.server.appliedWait;
  }
}
