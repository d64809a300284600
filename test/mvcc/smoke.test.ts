import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MvccStore, utf8 } from '../../src/index.js';

test('a fresh store is at revision 1 and each put takes the next revision', () => {
  const s = new MvccStore();
  assert.equal(s.currentRevision, 1);
  assert.equal(s.put({ key: utf8('a'), value: utf8('1') }).revision, 2);
  assert.equal(s.put({ key: utf8('a'), value: utf8('1') }).revision, 3);
});
