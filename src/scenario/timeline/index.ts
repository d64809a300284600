/**
 * The timeline page of a scenario run (see model.ts for what a run records, page.ts for the page): what
 * the rest of the scenario folder and the playground use of it.
 */
export * from './model.js';
export { renderSvg } from './draw.js';
export { memberSpans } from './members.js';
export { renderHtml, transcriptHtml, transcriptRef } from './page.js';
