/**
 * etcdserverpb.Cluster over one member: MemberList answers the single member, whose ID, name and URLs
 * are EtcdServer options. etcd's cluster server fills the header's cluster_id, member_id and raft_term
 * but leaves revision 0 (observed on 3.4.23).
 */
import { header } from './convert.js';
import type * as M from './messages.js';
import type { EtcdServer } from './etcd_server.js';

export class ClusterService {
  constructor(private readonly server: EtcdServer) {}

  /** Cluster.MemberList. */
  memberList(_req: M.MemberListRequest = {}): M.MemberListResponse {
    const s = this.server;
    const m = s.member;
    return {
      header: header(s.identity, 0),
      members: [{ ID: s.identity.memberId, name: m.name, peerURLs: [...m.peerUrls], clientURLs: [...m.clientUrls], isLearner: false }],
    };
  }
}
