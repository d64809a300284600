/** Teaching runs: scenario scripts, transcripts and timeline pictures (see scenarios/README.md). */
export { parseScenario, ScenarioSyntaxError, type ParsedScenario, type Step } from './parser.js';
export { runScenario, type RunOptions, type ScenarioResult, type ScenarioFailure, type VariantRun } from './runner.js';
export { renderHtml, renderSvg, timelineKeys, type TimelineModel } from './timeline/index.js';
export { labScript, scriptBlockers, scriptEtcdFlags, scriptNotes } from './script.js';

// For the floors above, which import this folder only through this index (test/layout/index_imports.test.ts).
export { transcriptHtml } from './timeline/index.js';
