/**
 * etcd's MemberUpdate on a member of the simulated cluster: the member asked checks the request
 * (src/server/member_update.ts, as a member in a process of its own does) and proposes Raft's UpdateNode
 * conf change; every member applies it to its own list of members — checked there as etcd's apply checks
 * it, so a refused update still takes its index — and the member asked answers with what its apply gave,
 * the members as it then lists them. Like any conf change, one at a time: a second proposed before the
 * first is applied is dropped by the leader (etcd's turns it into an empty entry) and its caller times out.
 * The members' IDs stay those --initial-cluster gave (etcd derives an ID once, at MemberAdd).
 */
import { applyMemberUpdate, header, listedOut } from '../server/index.js';
import type * as M from '../server/messages.js';
import type { EtcdCluster } from './cluster.js';
import type { MemberState, Reply } from './member_state.js';

/** Proposes the update at `m`; `reply` gets `m`'s apply of it. */
export function proposeMemberUpdate(c: EtcdCluster, m: MemberState, update: { readonly id: bigint; readonly peerUrls: readonly string[] }, reply: Reply<M.MemberUpdateResponse>): void {
  const { id, peerUrls } = update;
  c.propose(
    m,
    () => ({
      kind: 'request',
      label: `memberUpdate ${id}`,
      conf: { type: 'update', id },
      apply: (s, member): M.MemberUpdateResponse => {
        // A conf change is one Raft entry, also when its apply refuses it.
        s.noteRaftEntry();
        const refused = applyMemberUpdate(member.members, id, peerUrls, s.etcdVersion);
        if (refused !== undefined) throw refused;
        return { header: header(s.identity, 0), members: listedOut(member.members) };
      },
    }),
    reply as Reply<unknown>,
  );
}

