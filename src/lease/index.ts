/** etcd's lessor on the simulator's clock (server/lease), and its errors. */
export { Lease, MAX_LEASE_TTL } from './lease.js';
export {
  Lessor,
  createLeasedStore,
  minLeaseTTLFor,
  ErrNotPrimary,
  DEFAULT_CHECKPOINT_INTERVAL_MS,
  DEFAULT_ELECTION_TICKS,
  DEFAULT_LEASE_LOOP_MS,
  DEFAULT_LEASE_REVOKE_RATE,
  DEFAULT_TICK_MS,
  type GrantResult,
  type LeasedStoreOptions,
  type LessorEvent,
  type LessorListener,
  type LessorOptions,
  type RevokeResult,
  type TimeToLiveResult,
} from './lessor.js';
export * from './errors.js';
