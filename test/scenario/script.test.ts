/**
 * The script format: malformed lines fail with their line number and what was expected; a failed expectation
 * stops the run at its line; captures, arithmetic and etcdctl's output formats.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseScenario, runScenario } from '../../src/scenario/index.js';
import { syntaxError } from './helpers.js';

test('malformed lines fail with the line number and what was expected', () => {
  const cases: [string, number, RegExp][] = [
    ['put /a 1\nput /a\n', 2, /put expects a key and a value/],
    ['# comment\n\nfrobnicate /a\n', 3, /unknown command frobnicate/],
    ['get /a --rev=abc\n', 1, /--rev expects an integer, got abc/],
    ['get /a --revision=3\n', 1, /unknown flag --revision/],
    ['advance soon\n', 1, /advance expects a duration like 500ms, 2s or 1m, got soon/],
    ['put /a 1\nexpect revision = 2\n', 2, /expect revision: expected one of == != <= >= < >, got =/],
    ['put /a 1\nexpect the moon\n', 2, /malformed expectation; expected one of:\n {2}expect ok/],
    ['watch W /a\nexpect watch W events == [PUT /a]\n', 2, /expected an event like PUT \/k@3/],
    ['watch W /a\nexpect watch W events == PUT /a@2\n', 2, /expected a list in brackets/],
    ['txn\nvalue("/a") = "1"\n\nput /a 2\n', 1, /txn: missing end/],
    ['txn\nvalue(/a) == 1\n\nput /a 2\n\nend\n', 2, /expected a txn compare like value\("k"\) = "v"/],
    ['txn\nvalue("/a") = "1"\n\nwatch W /a\n\nend\n', 4, /txn: expected a put, get or del op, got watch/],
    ['put /a 1\noption watchChanBufLen=4\n', 2, /option must come before the first step/],
    ['option nosuch=1\n', 1, /unknown option nosuch/],
    ['option quotaBackendBytes=16MB\n', 1, /option quotaBackendBytes: invalid value 16MB/],
    ['defrag now\n', 1, /defrag: unexpected now \(usage: defrag\)/],
    ['alarm raise\n', 1, /expected alarm list \| alarm disarm/],
    ['option restoreKeepsFutureMinRev=maybe\n', 1, /option restoreKeepsFutureMinRev: invalid value maybe/],
    ['etcd-version 2.3\n', 1, /etcd-version expects 3.4, 3.5, 3.6 or 3.7/],
    ['put /a "unterminated\n', 1, /unterminated double quote/],
    ['[bug] put /a 1\n', 1, /unknown variant \[bug\]; declare it first/],
    ['lease keep-alive 694d\n', 1, /lease keep-alive expects a lease ID and --once/],
    ['resume W\n', 1, /resume expects a watch name and --rev=N/],
    ['watch 9lives /a\n', 1, /expected a watch name/],
    ['put /a 1\netcdctl\n', 2, /expected an etcdctl command after etcdctl/],
  ];
  for (const [script, line, re] of cases) {
    const e = syntaxError(script);
    assert.equal(e.line, line, `line for ${JSON.stringify(script)}: ${e.message}`);
    assert.match(e.detail, re, `message for ${JSON.stringify(script)}`);
    // runScenario reports it as a failure instead of throwing.
    const r = runScenario(script);
    assert.equal(r.ok, false);
    assert.equal(r.failure?.kind, 'syntax');
    assert.equal(r.failure?.line, line);
  }
});

test('a failed expectation stops the run at its line with what was found; later steps do not run', () => {
  const r = runScenario('put /a 1\nput /a 2\nexpect revision == 7\nput /never x\n');
  assert.equal(r.ok, false);
  assert.deepEqual(r.failure, { line: 3, message: 'expect revision == 7: got revision 3', variant: undefined, kind: 'expectation' });
  assert.ok(r.transcript.includes('# expect revision == 7   ✗ got revision 3'));
  assert.ok(!r.transcript.some((l) => l.includes('/never')));
  assert.equal(r.timeline.failure, 'line 3: expect revision == 7: got revision 3');
});

test('runtime errors name the line: an unset variable, an unknown watch', () => {
  const a = runScenario('put /a 1\nget /a --rev=${R}\n');
  assert.equal(a.failure?.line, 2);
  assert.equal(a.failure?.kind, 'error');
  assert.match(a.failure!.message, /variable R is not set/);
  const b = runScenario('put /a 1\nbreak W\n');
  assert.deepEqual([b.failure?.line, b.failure?.message], [2, 'no watch named W (open it first: watch W KEY ...)']);
});

test('captures and $(( )) arithmetic; etcdctl output formats for put, get, del, txn, compact and errors', () => {
  const r = runScenario(
    [
      'put /a 1',
      'R = revision',
      'X = $((R * 10 - 5))',
      'put /b ${X} --prev-kv',
      'put /b again --prev-kv',
      'expect output == "OK\\n/b\\n15"',
      'get /a /c',
      'expect output == "/a\\n1\\n/b\\nagain"',
      'get /a --prefix --keys-only',
      'expect output == "/a\\n"',
      'get /a -w json',
      'expect output contains "\\"kvs\\":[{\\"key\\":\\"L2E=\\",\\"create_revision\\":2,\\"mod_revision\\":2,\\"version\\":1,\\"value\\":\\"MQ==\\"}],\\"count\\":1}"',
      'del /a --prev-kv',
      'expect output == "1\\n/a\\n1"',
      'del /nothing',
      'expect output == "0"',
      'expect revision == 5',
      'txn',
      'mod("/b") > "3"',
      '',
      'put /c 1',
      'del /b',
      '',
      'get /b',
      'end',
      'expect output == "SUCCESS\\n\\nOK\\n\\n1"',
      'compact $((R + 1))',
      'expect output == "compacted revision 3"',
      'get /a --rev=2',
      'expect error "etcdserver: mvcc: required revision has been compacted"',
      'expect output == "Error: etcdserver: mvcc: required revision has been compacted"',
      'compact 3',
      'expect error',
    ].join('\n'),
  );
  assert.equal(r.failure, undefined, r.transcript.join('\n'));
  assert.ok(r.transcript.includes('# X = $((R * 10 - 5)) → 15'));
  assert.ok(r.transcript.includes('$ etcdctl put /b 15 --prev-kv   # rev 3'));
});

test('watch events print as etcdctl watch prints them, labelled with the watch name and revision', () => {
  const r = runScenario(['put /w/a 1', 'watch W /w/ --prefix --prev-kv', 'put /w/a 2', 'del /w/a', 'expect watch W events == [PUT /w/a@3, DELETE /w/a@4]'].join('\n'));
  assert.ok(r.ok, r.transcript.join('\n'));
  const w = r.transcript.filter((l) => l.startsWith('[watch W'));
  assert.deepEqual(w, [
    '[watch W @3] PUT',
    '[watch W @3] /w/a',
    '[watch W @3] 1',
    '[watch W @3] /w/a',
    '[watch W @3] 2',
    '[watch W @4] DELETE',
    '[watch W @4] /w/a',
    '[watch W @4] 2',
    '[watch W @4] /w/a',
    '[watch W @4]',
  ]);
});

test('a slow consumer: responses queue on the server while it does not read, and arrive when it drains', () => {
  const r = runScenario(
    ['option watchChanBufLen=2', 'option watchSendWindowBytes=0', 'watch W /k', 'slow W', 'put /k 1', 'put /k 2', 'put /k 3', 'put /k 4', 'expect watch W events == []', 'drain W', 'advance 100ms', 'expect watch W events == [PUT /k@2, PUT /k@3, PUT /k@4, PUT /k@5]'].join('\n'),
  );
  assert.equal(r.failure, undefined, r.transcript.join('\n'));
});

test('variants run in order, each on a fresh member, with its own options and guarded steps', () => {
  const r = runScenario(['variant old etcd-version=3.4', 'variant new etcd-version=3.7', 'put /a 1', '[old] put /b 1', 'expect revision == 3', '[new] expect revision == 2'].join('\n'));
  assert.equal(r.ok, false);
  assert.deepEqual(
    r.runs.map((x) => [x.variant, x.ok]),
    [
      ['old', true],
      ['new', false],
    ],
  );
  assert.equal(r.failure?.variant, 'new');
  assert.equal(r.failure?.line, 5);
  assert.ok(r.transcript.includes('=== variant old: etcd-version=3.4 ==='));
  const only = runScenario(['variant old etcd-version=3.4', 'variant new etcd-version=3.7', 'put /a 1'].join('\n'), { variant: 'new' });
  assert.deepEqual(
    only.runs.map((x) => x.variant),
    ['new'],
  );
});

test('the common mistakes get a hint: sleep instead of advance, ${R+1} instead of $((R + 1)), no advance after a behind watch', () => {
  const sleep = syntaxError('put /a 1\nsleep 1\n');
  assert.equal(sleep.line, 2);
  assert.match(sleep.detail, /time is virtual and moves only on advance \(e\.g\. advance 1s/);
  const brace = syntaxError('put /a 1\nR = revision\nget /a --rev=${R+1}\n');
  assert.equal(brace.line, 3);
  assert.match(brace.detail, /^\$\{R\+1\} is not arithmetic: write \$\(\(R\+1\)\)/);
  const behind = runScenario(['put /a 1', 'put /a 2', 'watch W /a --rev=2', 'expect watch W events == [PUT /a@2, PUT /a@3]'].join('\n'));
  assert.equal(behind.ok, false);
  assert.match(behind.failure!.message, /got \[\] \(hint: W started behind the head at --rev; .*add advance 100ms after opening it\)$/);
  // Once time has moved, the hint is gone: the failure is about what was received.
  const moved = runScenario(['put /a 1', 'put /a 2', 'watch W /a --rev=2', 'advance 100ms', 'expect watch W events == [PUT /a@3]'].join('\n'));
  assert.equal(moved.failure?.message, 'expect watch W events == [PUT /a@3]: got [PUT /a@2, PUT /a@3]');
});

test('expect watch NAME count OP N counts the events received, over every stream of the watch', () => {
  const r = runScenario(['watch W /c', 'put /c 1', 'put /c 2', 'expect watch W count == 2', 'break W', 'resume W --rev=2', 'advance 100ms', 'expect watch W count == 4', 'expect watch W count > 3'].join('\n'));
  assert.equal(r.failure, undefined, r.transcript.join('\n'));
  const bad = runScenario(['watch W /c', 'put /c 1', 'expect watch W count >= 2'].join('\n'));
  assert.equal(bad.failure?.message, 'expect watch W count >= 2: got 1 events');
  assert.match(syntaxError('watch W /c\nexpect watch W count 2\n').detail, /expect watch count: expected one of/);
});

test('watches typed into one session (--stream=S) share one Watch stream: told apart by ID, progress for all, a cancel or break as on etcd', () => {
  const r = runScenario(
    [
      'put /m/a 0',
      'put /m/b 0',
      'watch A /m/a --stream=S',
      'watch B /m/ --prefix --stream=S',
      'put /m/a 1',
      'expect watch A events == [PUT /m/a@4]',
      'expect watch B events == [PUT /m/a@4]',
      'progress A',
      'expect watch B progress == 4',
      'compact 4',
      'watch C /m/ --prefix --rev=2 --stream=S',
      'advance 100ms',
      'expect watch C canceled compact_revision == 4',
      'put /m/b 1',
      'expect watch B last == 5',
      'break A',
      'put /m/b 2',
      'expect watch B last == 5',
    ].join('\n'),
  );
  assert.equal(r.failure, undefined, r.transcript.join('\n'));
  assert.equal(r.transcript.filter((l) => l.startsWith('$ etcdctl watch -i &   # session S')).length, 1, 'one session, opened once');
  assert.ok(r.transcript.includes('S> watch /m/ --prefix   # watch B on session S\'s stream, at rev 3'));
  assert.ok(r.transcript.includes('[session S] progress notify: 4'));
  assert.ok(r.transcript.includes('# watch C: canceled with compact_revision 4; session S and its other watches go on'));
  assert.ok(!r.transcript.includes('[watch C] Error: watch is canceled by the server'), 'etcdctl watch -i does not exit');
  const [a, b] = r.timeline.watchers;
  assert.deepEqual([a!.segments[0]!.end?.kind, b!.segments[0]!.end?.kind], ['broken', 'broken'], 'the break cuts every watch on the stream');
  assert.match(syntaxError('watch A /a --stream=\n').detail, /expected a stream name after --stream=/);
});

test('a large value from $(head -c N /dev/zero | tr ...): piped into etcdctl put in the transcript, shortened when printed; nothing else is substituted', () => {
  const r = runScenario(`watch W /v --prev-kv --fragment\nput /v "$(head -c 300 /dev/zero | tr '\\0' x)"\nput /v $(head -c 2 /dev/zero | tr '\\0' y)\nexpect get /v == yy\nexpect watch W responses == 2\n`);
  assert.ok(r.ok, r.transcript.join('\n'));
  assert.ok(r.transcript.includes("$ head -c 300 /dev/zero | tr '\\0' x | etcdctl put /v   # rev 2"), r.transcript.join('\n'));
  assert.ok(r.transcript.includes('[watch W @2] xxxxxxxxxxxxxxxx… [300 bytes; the transcript shortens values over 256 bytes]'));
  assert.match(r.transcript[0]!, /^\$ etcdctl watch \/v --prev-kv &   # watch W, at rev 1 \(fragment: true, as clientv3\.WithFragment\(\) asks; etcdctl has no flag for it\)$/);
  const other = runScenario('put /v "$(date)"\n');
  assert.equal(other.ok, false);
  assert.equal(other.failure!.message, "$(date): the only command substitution a scenario runs is $(head -c N /dev/zero | tr '\\0' C)");
  const wrong = runScenario('watch W /v\nput /v 1\nexpect watch W responses == 2\n');
  assert.equal(wrong.failure?.message, 'expect watch W responses == 2: got 1 responses');
});
