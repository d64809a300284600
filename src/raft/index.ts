/**
 * etcd's Raft per member (go.etcd.io/raft): a pure, message-driven node, its log, its messages and a
 * checker of Raft's safety properties across nodes. See README.md in this folder.
 */
export { RaftNodeChecker, entryFingerprint, type RaftNodeViolation } from './checker.js';
export { RaftLog } from './log.js';
export { MemoryStorage, type RaftPersistence } from './memory_storage.js';
export * from './messages.js';
export { RaftNode } from './node.js';
export { bootstrapStorage, type RaftNodeOptions, type RaftStatus, type RaftStorage, type Ready } from './ready.js';
export { RaftLoop, type RaftLoopOptions } from './loop.js';
