import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ctl, InteractiveWatch, beforeFreshSimAndEtcd, type InteractiveResult, type Target } from './etcdctl_helpers.js';
import { requireCommands } from '../support/prerequisites.js';

/** Compared with a real etcd 3.4.23 through etcdctl (skipped outside CI when they are missing). */
const skip = requireCommands(['etcd', 'etcdctl']);

// `etcdctl watch -i` the way a user runs it: stdin stays open, watch lines are typed one at a time while
// other etcdctl processes write, and every step waits for what the watch prints. The same session runs
// against a fresh real etcd 3.4.23 and a fresh etcdsim serve; what etcdctl prints must be the same.
let sim: Target;
let etcd: Target;
beforeFreshSimAndEtcd((s, e) => {
  sim = s;
  etcd = e;
});

async function put(t: Target, ...args: string[]): Promise<void> {
  const r = await ctl(t, args);
  assert.equal(r.code, 0, `${t.name}: etcdctl ${args.join(' ')}: ${r.out}`);
}

/** The whole interactive session against one target; each wait names what etcdctl must have printed. */
async function session(t: Target): Promise<InteractiveResult> {
  await put(t, 'put', 'foo', 'x'); // rev 2
  await put(t, 'put', '/p/a', '1'); // rev 3
  await put(t, 'put', 'k1', 'a'); // rev 4
  const w = new InteractiveWatch(t);
  try {
    // Watchers on disjoint keys, so each write wakes one of them: two watchers printing at once would
    // interleave their lines in goroutine order, on etcd as on etcdsim.
    w.send('watch foo');
    await w.watchers(1);
    w.send('watch --prefix /p/');
    await w.watchers(2);
    w.send('watch --rev 2 --prev-kv k1'); // replays k1's history from rev 2: the put at rev 4
    await w.waitFor('stdout', 'PUT\nk1\na\n');
    await w.watchers(3);

    // `progress`: one progress notification, delivered to every watcher of the stream
    w.send('progress');
    await w.waitFor('stdout', 'progress notify: 4\n', 3);

    // lines etcdctl rejects, each with a message on stderr; the session goes on
    w.send('bogus');
    w.send('');
    w.send('watch');
    w.send('watch a b --prefix');
    await w.waitFor('stderr', 'mutually exclusive');

    await put(t, 'put', 'foo', 'y'); // rev 5
    await w.waitFor('stdout', 'PUT\nfoo\ny\n');
    await put(t, 'put', '/p/b', '2'); // rev 6
    await w.waitFor('stdout', 'PUT\n/p/b\n2\n');
    await put(t, 'put', 'k1', 'c'); // rev 7: with the previous value
    await w.waitFor('stdout', 'PUT\nk1\na\nk1\nc\n');
    await put(t, 'del', 'foo'); // rev 8
    await w.waitFor('stdout', 'DELETE\nfoo\n');

    // a watch typed with a key range
    w.send('watch /r/a /r/c');
    await w.watchers(4);
    await put(t, 'put', '/r/c', 'out'); // rev 9: outside [/r/a, /r/c)
    await put(t, 'put', '/r/b', 'in'); // rev 10
    await w.waitFor('stdout', 'PUT\n/r/b\nin\n');

    // a watch from a compacted revision is canceled by the server; etcdctl says so on stderr
    await put(t, 'compact', '8');
    w.send('watch --rev 3 /p/a');
    await w.waitFor('stderr', 'watch was canceled');

    // a watch typed with a command to run for each event, given the event in ETCD_WATCH_* variables
    // (from rev 11, the put's: whether the canceled watcher still counts as registered is etcd's business)
    w.send('watch --rev 11 --prefix /x/ -- sh -c "echo ran $ETCD_WATCH_EVENT_TYPE $ETCD_WATCH_KEY $ETCD_WATCH_VALUE $ETCD_WATCH_REVISION"');
    await put(t, 'put', '/x/1', 'one'); // rev 11
    await w.waitFor('stdout', '"one" 11\n');
    return await w.end();
  } finally {
    w.kill();
  }
}

test('etcdctl watch -i with stdin kept open: typed watches, progress, bad lines, live events, compaction', { skip }, async () => {
  const a = await session(etcd);
  const b = await session(sim);
  assert.deepEqual(b, a);
  // and the session did what it says (so equal outputs are not equally empty)
  assert.match(a.stdout, /^PUT\nk1\na\n(progress notify: 4\n){3}PUT\nfoo\ny\n/);
  assert.match(a.stderr, /Invalid command bogus/);
  assert.match(a.stderr, /required revision has been compacted/);
  assert.match(a.stdout, /ran "PUT" "\/x\/1" "one" 11\n$/);
});
