// Mutation testing of the engine (issue #35): StrykerJS mutates src/mvcc, src/watch and src/lease, and
// only the property suites may kill the mutants, so the score says how much of the engine's behaviour the
// properties pin down (the example tests are left out on purpose). `npm run mutate` runs it in full (long:
// hours on two cores; restrict with `npm run mutate -- --mutate src/watch/watcher.ts`); the CI test
// test/properties/mutation.test.ts re-runs only what changed since the committed incremental baseline.
// Scores and the surviving mutants, each killed or explained: docs/mutation.md.

/** The property files that kill mutants: every engine-level property (the served-door ones are too slow). */
export const propertyFiles = [
  'test/properties/mvcc.property.test.ts',
  // The store's record columns and its log's column alone, past the sizes the store's property reaches (column growth, slabs).
  'test/properties/history.property.test.ts',
  'test/properties/list_then_watch.property.test.ts',
  'test/properties/watch_guarantees.property.test.ts',
  'test/properties/catch_up_pace.property.test.ts',
  // Where a watch response splits and what it weighs, at the limit's edges (a pure function: milliseconds).
  'test/properties/fragment.property.test.ts',
  'test/properties/future_watch_restore.property.test.ts',
  'test/properties/lease.property.test.ts',
  'test/properties/send_window.property.test.ts',
  'test/properties/stream_link.property.test.ts',
  'test/properties/bad_input.property.test.ts',
  // The bytes etcd marshals (wire.ts, request_size.ts) against protobufjs, and the index's hash table against a Map.
  'test/properties/wire.property.test.ts',
  'test/properties/key_slots.property.test.ts',
  // The Raft model's randomized suite: seeded swarms with the Raft checker after every tick.
  'test/cluster/swarm.test.ts',
  // The per-member Raft node (src/raft) on a faulty network, with its safety checker after every event.
  'test/properties/raft_node.property.test.ts',
];

/** The tests of those files that kill mutants (name patterns). */
const propertyTests = [
  'MvccStore agrees',
  'History agrees',
  'ByteSlab copies agree',
  'byte helpers agree',
  'Column agrees',
  'gives up on txns',
  'correct informer',
  'every watch keeps',
  'catch-up pace',
  'splits where',
  'replays nothing',
  'future revision gets nothing',
  'pre-fix',
  'lessor matches',
  'slow or silent reader',
  'whose link drops',
  'junk-typed calls',
  'malformed requests',
  'agree with protobufjs',
  'KeySlots',
  'swarm',
  'Raft nodes on a faulty network',
];

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  // The oracles are left out: src/watch/guarantees.ts (the watch checker), src/lease/check.ts and the
  // Raft checkers (src/cluster/checker.ts, src/raft/checker.ts); a mutant that makes a checker more
  // lenient cannot fail while the code it checks is right.
  // The checkValid() methods inside the engine's classes are fenced off with `Stryker disable` comments.
  mutate: [
    'src/mvcc/**/*.ts',
    'src/watch/**/*.ts',
    'src/lease/**/*.ts',
    'src/raft/**/*.ts',
    '!src/**/index.ts',
    '!src/raft/checker.ts',
    '!src/watch/guarantees.ts',
    '!src/lease/check.ts',
  ],
  testRunner: 'tap',
  tap: {
    // The CI test narrows the run to the property files that reached the changed code.
    testFiles: process.env.STRYKER_TEST_FILES?.split(',') ?? propertyFiles,
    // Only the properties of the engine: the tests of a property's own power against wrong clients or a
    // wrong checker ("has teeth", "the checker catches") kill no mutant and only slow each run. Node 20 has
    // no exclude pattern (a top-level test runs when the root's name matches), hence the list.
    nodeArgs: ['--import', './test/support/ts_loader.mjs', '--test-reporter=tap', `--test-name-pattern=${propertyTests.join('|')}`, '-r', '{{hookFile}}', '{{testFile}}'],
    forceBail: true,
  },
  // The CI test skips the type checker (its start costs more than the few mutants it re-measures).
  checkers: process.env.STRYKER_CHECKERS === 'none' ? [] : ['typescript'],
  tsconfigFile: 'tsconfig.mutation.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  coverageAnalysis: 'perTest',
  // Stryker's own incremental mode reuses the last local run's results (reports/, not committed); CI diffs
  // the sources against the committed baseline report itself (see test/properties/mutation.test.ts).
  incremental: process.env.STRYKER_INCREMENTAL !== 'off',
  incrementalFile: process.env.STRYKER_INCREMENTAL_FILE ?? 'reports/mutation/incremental.json',
  concurrency: Number(process.env.STRYKER_CONCURRENCY ?? 2),
  timeoutMS: 20000,
  timeoutFactor: 2,
  reporters: ['clear-text', 'json', 'progress-append-only'],
  jsonReporter: { fileName: process.env.STRYKER_REPORT ?? 'reports/mutation/mutation.json' },
  clearTextReporter: { allowColor: false, logTests: false, maxTestsToLog: 0 },
  tempDirName: process.env.STRYKER_TMP ?? '.stryker-tmp',
  cleanTempDir: true,
  ignorePatterns: ['.stryker-tmp*', '*.log', 'dist', 'bench', 'docs', 'scenarios', 'reports', 'etc', '.ci', 'test/go', 'test/clients', 'test/package'],
  thresholds: { high: 90, low: 80, break: null },
};
