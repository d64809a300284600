/**
 * Members in separate processes, as etcd's rafthttp and raftNode run them: what the floors above use of this
 * folder (the client port serving a process member, the `etcd` command starting one). Both load it by a
 * dynamic import, so `etcdsim etcd` of a single member never loads the peer code.
 */
export { ProcessMember, JoinError, initialMemberId, peerAddressOf } from './process_member.js';
export type { InitialMember, ProcessClusterMember, ProcessMemberEvents, ProcessMemberOptions } from './process_member.js';
export { processServices } from './process_services.js';
export type { PeerAddress, PeerTls } from './transport.js';
