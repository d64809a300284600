/**
 * A malformed scenario line. Like etcdctl refusing a bad command line before it sends anything, a script
 * with one malformed line fails as a whole, before its first step runs, naming the line and what was expected.
 */

/** A malformed line: its 1-based number and what was wrong with it. */
export class ScenarioSyntaxError extends Error {
  constructor(
    readonly line: number,
    readonly detail: string,
  ) {
    super(`line ${line}: ${detail}`);
    this.name = 'ScenarioSyntaxError';
  }
}
