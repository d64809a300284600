// Mutation testing of the engine (issue #35): StrykerJS mutates src/mvcc, src/watch and src/lease, and
// only the property suites may kill the mutants, so the score says how much of the engine's behaviour the
// properties pin down (the example tests are left out on purpose). `npm run mutate` runs it in full (long:
// hours on two cores; restrict with `npm run mutate -- --mutate src/watch/watcher.ts`); the CI test
// test/properties/mutation.test.ts re-runs only what changed since the committed incremental baseline.
// Scores and the surviving mutants, each killed or explained: docs/mutation.md.

/** The property files that kill mutants: every engine-level property (the served-door ones are too slow). */
export const propertyFiles = [
  'test/properties/mvcc.property.test.ts',
  'test/properties/list_then_watch.property.test.ts',
  'test/properties/watch_guarantees.property.test.ts',
  'test/properties/future_watch_restore.property.test.ts',
  'test/properties/lease.property.test.ts',
  'test/properties/send_window.property.test.ts',
  'test/properties/stream_link.property.test.ts',
  'test/properties/bad_input.property.test.ts',
  // The Raft model's randomized suite: seeded swarms with the Raft checker after every tick.
  'test/cluster/swarm.test.ts',
];

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  // The oracles are left out: src/watch/guarantees.ts (the watch checker), src/lease/check.ts and the
  // Raft checker; a mutant that makes a checker more lenient cannot fail while the code it checks is right.
  // The checkValid() methods inside the engine's classes are fenced off with `Stryker disable` comments.
  mutate: [
    'src/mvcc/**/*.ts',
    'src/watch/**/*.ts',
    'src/lease/**/*.ts',
    'src/cluster/raft_log.ts',
    'src/cluster/cluster.ts',
    '!src/**/index.ts',
    '!src/watch/guarantees.ts',
    '!src/lease/check.ts',
  ],
  testRunner: 'tap',
  tap: {
    testFiles: propertyFiles,
    nodeArgs: ['--import', 'tsx', '--test-reporter=tap', '-r', '{{hookFile}}', '{{testFile}}'],
    forceBail: true,
  },
  checkers: ['typescript'],
  tsconfigFile: 'tsconfig.mutation.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  coverageAnalysis: 'perTest',
  // Stryker's own incremental mode reuses the last local run's results (reports/, not committed); CI diffs
  // the sources against the committed baseline report itself (see test/properties/mutation.test.ts).
  incremental: true,
  incrementalFile: process.env.STRYKER_INCREMENTAL ?? 'reports/mutation/incremental.json',
  concurrency: 2,
  timeoutMS: 20000,
  timeoutFactor: 2,
  reporters: ['clear-text', 'json', 'progress-append-only'],
  jsonReporter: { fileName: process.env.STRYKER_REPORT ?? 'reports/mutation/mutation.json' },
  clearTextReporter: { allowColor: false, logTests: false, maxTestsToLog: 0 },
  tempDirName: process.env.STRYKER_TMP ?? '.stryker-tmp',
  cleanTempDir: true,
  ignorePatterns: ['dist', 'bench', 'docs', 'scenarios', 'reports', 'etc', '.ci', 'test/go', 'test/clients', 'test/package'],
  thresholds: { high: 90, low: 80, break: null },
};
