/**
 * The shadow's replayable log (src/shadow/scenario.ts) past its bound: the oldest entries go first, what is
 * kept stays in the order it came, and the record says it no longer starts at the shadow's start.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ScenarioLog } from '../../src/shadow/scenario.js';

test('past its bound the log keeps the newest entries, in order, and says it is not complete', () => {
  const log = new ScenarioLog(1, '3.4', 3);
  const put = (i: number): void => log.add('KV.Put', { i }, { ok: { header: { revision: String(i) } } });
  for (let i = 1; i <= 3; i++) put(i);
  assert.equal(log.file().complete, true);
  assert.deepEqual(log.file().steps.map((s) => (s.request as { i: number }).i), [1, 2, 3]);
  for (let n = 4; n <= 11; n++) {
    put(n);
    assert.equal(log.size, 3);
    assert.deepEqual(log.file().steps.map((s) => (s.request as { i: number }).i), [n - 2, n - 1, n], `after ${n}`);
    assert.equal(log.file().complete, false);
  }
  assert.match(log.text(), /"steps": \[/);
});
