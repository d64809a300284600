/**
 * The parts of one run that its steps act on: the run's state (member, transcript, variables, last
 * response), its named watches, its leases, its snapshots and, on a cluster, its members.
 */
import type { ScenarioCluster } from './cluster.js';
import type { ScenarioLeases } from './leases.js';
import type { ScenarioSnapshots } from './snapshots.js';
import type { RunState } from './state.js';
import type { ScenarioWatches } from './watches.js';

/** What a command, directive or expectation of one run works with. */
export interface RunContext {
  readonly state: RunState;
  readonly watches: ScenarioWatches;
  readonly leases: ScenarioLeases;
  readonly snapshots: ScenarioSnapshots;
  /** The cluster, when the script runs on one (`members N`). */
  readonly cluster: ScenarioCluster | undefined;
}
