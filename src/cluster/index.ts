/** A simulated etcd cluster in one process: members each running src/raft's node, the network between them, fault levers. */
export { EtcdCluster, type ClusterMemberConfig, type ClusterTraceEvent, type EtcdClusterOptions, type SharedServerOptions } from './cluster.js';
export { MemberState, type ConnectOptions, type EntryBody, type EntryKind, type MemberRaftStatus, type MemberRef, type RaftRole, type Reply } from './member_state.js';
export type { CallAnswer } from './routing.js';
export type { ClusterLevers } from './levers.js';
// What a test holds of a simulated cluster (sim.cluster) and of its members.
export type { EtcdClusterView, SimulatedMember } from './cluster_view.js';
export { ClusterMemberServices, type ClusterAuth, type ClusterKV, type ClusterLease, type ClusterMaintenance, type ClusterMembership } from './services.js';
export { ClusterMemberView } from './member_view.js';
export { MEMBER_INTERNAL_CLIENT, type ClusterElection, type ClusterLock } from './lock_election.js';
export { MAX_NO_LEADER_COUNT } from './require_leader.js';
export * as clusterErrors from './errors.js';
export { RaftChecker, checkRaftEveryTick, type RaftViolation } from './checker.js';
