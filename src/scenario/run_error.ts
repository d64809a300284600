/**
 * A problem while a step runs (an unset variable, an unknown watch, a failed expectation): it stops that
 * variant's run at the step's line, as a failing command stops a lab's shell script under `set -e`.
 */

/** Stops the run; `kind` tells a failed expectation from any other error. */
export class RunError extends Error {
  constructor(
    readonly kind: 'expectation' | 'error',
    message: string,
  ) {
    super(message);
  }
}
