/** What the scenario tests share. */
import assert from 'node:assert/strict';
import { parseScenario, ScenarioSyntaxError } from '../../src/scenario/index.js';

/** The syntax error `script` is refused with (fails the test if it parses). */
export function syntaxError(script: string): ScenarioSyntaxError {
  try {
    parseScenario(script);
  } catch (err) {
    if (err instanceof ScenarioSyntaxError) return err;
    throw err;
  }
  assert.fail(`no syntax error for:\n${script}`);
}
