/**
 * The browser playground (`etcdsim playground`): the page is written with --out and opened from file:// in
 * headless Chromium, driven over the DevTools protocol (--remote-debugging-pipe: NUL-separated JSON on file
 * descriptors 3 and 4). A shared `#script=` link runs its lab; an edit reruns it, redraws the timeline and
 * updates the link; a bundled lab and a bug switch are one click each; the seed field reruns and travels in the
 * link; the transcript and the timeline in the frame light each other up under the real mouse; screenshots at
 * 1400 and 800 px (test/scenario/cdp.ts drives the browser). On the Node side: the bundle needs no
 * Node built-in, and the browser stand-ins for Node's Buffer and crypto give Node's bytes.
 * Chromium is needed for the browser test: without it the test skips outside CI and fails in CI
 * (test/support/prerequisites.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, pbkdf2Sync } from 'node:crypto';
import { Buffer as NodeBuffer } from 'node:buffer';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { runCli } from '../../src/cli/program.js';
import { labPath, listBundledScenarios } from '../../src/cli/run_command.js';
import { bundlePlayground, PlaygroundBuildError } from '../../src/playground/build_page.js';
import { runScenario } from '../../src/scenario/index.js';
import { Buffer as BrowserBuffer } from '../../src/playground/browser/bytes_platform.js';
import * as browserCrypto from '../../src/playground/browser/crypto_platform.js';
import { decodeFragment, encodeFragment, fromBase64Url, parseSeed, toBase64Url } from '../../src/playground/fragment.js';
import { findChromium, requireChromium } from '../support/prerequisites.js';
import { screenshotDir, startBrowser, type BrowserPage } from './cdp.js';

/** A tiny lab: two writes under a watch. */
const LAB = ['## A tiny lab: two puts under a watch.', 'watch W /t/ --prefix', 'put /t/a 1', 'put /t/b 2', 'expect watch W events == [PUT /t/a@2, PUT /t/b@3]', ''].join('\n');

/**
 * In-page helpers: `settled(n)` resolves once the page has finished run n (data-runs) and the timeline frame
 * shows that run's page (its own check ran: data-rendered), then reports what the test asserts on.
 */
const HELPERS = `
window.__frameGen = window.__frameGen || 0;
window.__settled = (n) => new Promise((resolve) => {
  const frame = document.getElementById('timeline');
  const report = () => {
    const fd = frame.contentDocument;
    return {
      runs: Number(document.documentElement.dataset.runs),
      ok: document.documentElement.dataset.ok,
      lab: document.documentElement.dataset.lab,
      variant: document.documentElement.dataset.variant,
      seed: document.documentElement.dataset.seed,
      hash: location.hash,
      status: document.getElementById('status').textContent,
      transcript: document.getElementById('transcript').textContent,
      editor: document.getElementById('script').value,
      writes: fd.querySelectorAll('svg.timeline .write').length,
      watcherLanes: fd.querySelectorAll('.watcher-lane').length,
      runSections: [...fd.querySelectorAll('section.run')].map((s) => s.dataset.variant || ''),
      title: fd.title,
      linksOut: fd.querySelectorAll('a[href^="http"]').length,
      linksInFrame: fd.querySelectorAll('a[href^="http"]:not([target="_blank"])').length,
      frameErrors: fd.documentElement.dataset.errors || '0',
      gen: fd.documentElement.dataset.gen,
    };
  };
  // Event-driven: the page's data-runs attribute changes after each run, the frame fires load after its page's own load handler ran.
  const ready = () => {
    const fd = frame.contentDocument;
    return Number(document.documentElement.dataset.runs) >= n && fd !== null && fd.readyState === 'complete' && fd.documentElement.dataset.rendered === 'yes' && fd.documentElement.dataset.gen === undefined;
  };
  const observer = new MutationObserver(() => check());
  const check = () => {
    if (!ready()) return;
    observer.disconnect();
    frame.removeEventListener('load', check);
    frame.contentDocument.documentElement.dataset.gen = String(++window.__frameGen);
    resolve(report());
  };
  observer.observe(document.documentElement, { attributes: true });
  frame.addEventListener('load', check);
  check();
});
`;

interface Seen {
  runs: number;
  ok: string;
  lab: string;
  variant: string;
  seed: string;
  hash: string;
  status: string;
  transcript: string;
  editor: string;
  writes: number;
  watcherLanes: number;
  runSections: string[];
  title: string;
  linksOut: number;
  linksInFrame: number;
  frameErrors: string;
}

test('headless Chromium: a shared #script= link runs its lab; an edit reruns and updates the link; a lab and a bug switch are one click', { skip: requireChromium(), timeout: 120_000 }, async () => {
  const chromium = findChromium()!;
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-playground-'));
  const out: string[] = [];
  const shots = screenshotDir(dir);
  mkdirSync(shots, { recursive: true });
  let page: BrowserPage | undefined;
  try {
    assert.equal(await runCli(['playground', '--out', join(dir, 'page')], { out: (l) => out.push(l), err: (l) => out.push(l) }), 0, out.join('\n'));
    const file = join(dir, 'page', 'index.html');
    assert.match(out.join('\n'), /# playground written to .*index\.html/);
    const html = readFileSync(file, 'utf8');
    assert.doesNotMatch(html, /<script[^>]+src=|<link[^>]+href=/, 'self-contained: no script or style loaded from elsewhere');

    const link = `${pathToFileURL(file).href}#script=${toBase64Url(LAB)}`;
    page = await startBrowser(chromium, dir, 1400);
    const evaluate = page.evaluate.bind(page) as <T>(expression: string) => Promise<T>;
    // Open the shared link the way a learner does, and wait for the page's load event.
    await page.open(link);
    await evaluate(HELPERS);

    // 1. The shared link: its script is in the editor, ran, and is drawn.
    const first = await evaluate<Seen>('__settled(1)');
    assert.equal(first.editor, LAB, 'the editor holds the script from the link');
    assert.equal(first.ok, 'true', first.transcript);
    assert.match(first.transcript, /^\$ etcdctl watch \/t\/ --prefix &   # watch W, at rev 1$/m);
    assert.match(first.transcript, /^\[watch W @2\] PUT\n\[watch W @2\] \/t\/a\n\[watch W @2\] 1$/m, 'the watch event as etcdctl prints it');
    assert.match(first.transcript, /^\[watch W @3\] PUT\n\[watch W @3\] \/t\/b\n\[watch W @3\] 2$/m);
    assert.equal(first.writes, 2, 'two write marks on the timeline');
    assert.equal(first.watcherLanes, 1, 'one watcher lane');
    assert.equal(first.frameErrors, '0', 'no script error in the timeline page');
    assert.match(first.status, /^ok/);

    // 2. An edit: set the text, fire the input event; after the debounce it reruns, redraws, updates the link.
    const edited = LAB.replace('expect watch W events == [PUT /t/a@2, PUT /t/b@3]\n', 'del /t/a\nexpect watch W events == [PUT /t/a@2, PUT /t/b@3, DELETE /t/a@4]\n');
    await evaluate(`(() => { const t = document.getElementById('script'); t.value = ${JSON.stringify(edited)}; t.dispatchEvent(new Event('input', { bubbles: true })); return true; })()`);
    const second = await evaluate<Seen>('__settled(2)');
    assert.equal(second.ok, 'true', second.transcript);
    assert.equal(second.writes, 3, 'the delete is a third write mark');
    assert.match(second.transcript, /^\[watch W @4\] DELETE\n\[watch W @4\] \/t\/a$/m);
    assert.equal(second.hash, encodeFragment({ script: edited, variant: undefined }), 'the link now carries the edited script');
    assert.equal(decodeFragment(second.hash)?.script, edited);

    // 3. A bundled lab, one click.
    await evaluate(`document.querySelector('button[data-lab="txn-one-revision"]').click(), true`);
    const third = await evaluate<Seen>('__settled(3)');
    assert.equal(third.lab, 'txn-one-revision');
    assert.equal(third.ok, 'true', third.transcript);
    assert.equal(third.editor, readFileSync(join('scenarios', 'txn-one-revision.etcdsim'), 'utf8'));
    assert.equal(third.title, 'txn-one-revision');
    assert.ok(third.writes > 0);
    assert.equal(decodeFragment(third.hash)?.script, third.editor, 'the link follows the lab');
    assert.equal(decodeFragment(third.hash)?.lab, 'txn-one-revision', 'and names it');

    // 4. A bug pair, then its bug switch: only the `bug` variant runs, and the link says so.
    await evaluate(`document.querySelector('button[data-lab="bugs/20229-progress-below-future-start"]').click(), true`);
    const fourth = await evaluate<Seen>('__settled(4)');
    assert.deepEqual(fourth.runSections, ['bug', 'fixed'], 'both variants side by side');
    assert.ok(fourth.linksOut > 0, 'the bug page links its etcd issue and PR');
    assert.equal(fourth.linksInFrame, 0, 'links out open beside the playground, not inside its frame');
    await evaluate(`document.querySelector('#variants input[data-variant="bug"]').click(), true`);
    const fifth = await evaluate<Seen>('__settled(5)');
    assert.equal(fifth.variant, 'bug');
    assert.deepEqual(fifth.runSections, ['bug'], 'only the bug variant ran');
    assert.match(fifth.transcript, /^=== variant bug: progressRespectsStartRev=false ===$/m);
    assert.doesNotMatch(fifth.transcript, /=== variant fixed/);
    assert.deepEqual(decodeFragment(fifth.hash), { script: fourth.editor, variant: 'bug', lab: 'bugs/20229-progress-below-future-start' });

    // 5. The seed: a new seed reruns (other lease IDs, nothing else) and travels in the link; a link with a seed opens with it.
    await evaluate(`document.querySelector('button[data-lab="lease-expiry-timing"]').click(), true`);
    const seed0 = await evaluate<Seen>('__settled(6)');
    assert.equal(seed0.seed, '0');
    await evaluate(`(() => { const f = document.getElementById('seed'); f.value = '5'; f.dispatchEvent(new Event('input', { bubbles: true })); return true; })()`);
    const seed5 = await evaluate<Seen>('__settled(7)');
    assert.equal(seed5.seed, '5');
    assert.equal(seed5.ok, 'true', seed5.transcript);
    const leaseLab = readFileSync(join('scenarios', 'lease-expiry-timing.etcdsim'), 'utf8');
    assert.equal(seed5.transcript, runScenario(leaseLab, { seed: 5 }).transcript.join('\n'), 'the run with seed 5, as etcdsim run --seed 5 prints it');
    assert.notEqual(seed5.transcript, seed0.transcript);
    assert.equal(seed5.transcript.replace(/[0-9a-f]{16}/g, 'ID'), seed0.transcript.replace(/[0-9a-f]{16}/g, 'ID'), 'only the lease IDs differ');
    assert.deepEqual(decodeFragment(seed5.hash), { script: leaseLab, variant: undefined, seed: 5, lab: 'lease-expiry-timing' });
    assert.match(seed5.hash, /&seed=5&lab=lease-expiry-timing$/);
    await evaluate(`(() => { const f = document.getElementById('seed'); f.value = 'x'; f.dispatchEvent(new Event('input', { bubbles: true })); return document.getElementById('seed').classList.contains('invalid'); })()`);
    // A new document (not a fragment change of this one): a learner opening the link in a fresh tab.
    await page.open('about:blank');
    await page.open(`${pathToFileURL(file).href}${encodeFragment({ script: LAB, variant: undefined, seed: 9 })}`);
    await evaluate(HELPERS);
    const opened = await evaluate<Seen & { field: string }>(`__settled(1).then((r) => ({ ...r, field: document.getElementById('seed').value }))`);
    assert.equal(opened.seed, '9');
    assert.equal(opened.field, '9', 'the seed field shows the link\'s seed');

    // 6. The playground's transcript and the timeline in the frame, linked both ways, with the real mouse.
    await page.resize(1400);
    await evaluate(`document.querySelector('button[data-lab="compaction-evicts-behind-watcher"]').click(), true`);
    await evaluate<Seen>('__settled(2)');
    assert.ok(await page.hover('#transcript .tl[data-ref="watch C@23"]'));
    const lit = await evaluate<{ marks: string[]; litMarks: string }>(
      `({ marks: [...document.getElementById('timeline').contentDocument.querySelectorAll('svg.timeline .hl')].map((e) => e.getAttribute('class').replace(/ hl$/, '') + '@' + e.getAttribute('data-rev')), litMarks: document.documentElement.dataset.litMarks })`,
    );
    assert.deepEqual(lit.marks, ['watch-event put@23'], 'hovering the event line lights its mark in the frame');
    assert.equal(lit.litMarks, '1');
    assert.ok(await page.hover('.watcher-lane[data-watch="BELOW"] .watch-canceled', '#timeline'));
    const back = await evaluate<{ lines: string[]; visible: boolean }>(`(() => {
      const t = document.getElementById('transcript');
      const lines = [...t.querySelectorAll('.tl.hl')];
      return { lines: lines.map((e) => e.textContent), visible: lines.length > 0 && lines[0].offsetTop >= t.scrollTop && lines[0].offsetTop <= t.scrollTop + t.clientHeight };
    })()`);
    assert.ok(back.lines.some((l) => l.startsWith('[watch BELOW] watch was canceled')), back.lines.join('\n'));
    assert.ok(back.visible, 'scrolled into view in the playground transcript');
    for (const width of [1400, 800]) {
      await page.resize(width);
      assert.equal(await evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth'), 0, `@${width}: the playground does not scroll sideways`);
      assert.ok((await page.screenshot(join(shots, `playground-${width}.png`))) > 10_000);
    }

    // 7. Every bundled lab and bug pair, run in the browser, prints what the same run prints on Node (seed 0 again).
    await evaluate(`(() => { const f = document.getElementById('seed'); f.value = '0'; f.dispatchEvent(new Event('input', { bubbles: true })); return true; })()`);
    const inBrowser = await evaluate<Record<string, string>>(
      `(() => { const out = {}; for (const b of document.querySelectorAll('#labs button')) { b.click(); out[b.dataset.lab] = document.getElementById('transcript').textContent + '\\n' + document.documentElement.dataset.ok; } return out; })()`,
    );
    const bundled = listBundledScenarios();
    assert.deepEqual(Object.keys(inBrowser).sort(), bundled.map((s) => s.name).sort(), 'every bundled scenario is one click away');
    for (const s of bundled) {
      const onNode = runScenario(readFileSync(s.path, 'utf8'));
      assert.equal(inBrowser[s.name], `${onNode.transcript.join('\n')}\n${String(onNode.ok)}`, `${s.name}: the browser run differs from the Node run`);
    }

    // 8. The path: without a link the page opens on the path's first lab; an edit keeps the lab's name (marked
    // edited), in the page and in its link, and that link opens with it.
    const path = labPath();
    await page.open('about:blank');
    await page.open(pathToFileURL(file).href);
    await evaluate(HELPERS);
    const start = await evaluate<Seen & { buttons: string[] }>(`__settled(1).then((r) => ({ ...r, buttons: [...document.querySelectorAll('#labs button')].map((b) => b.dataset.lab) }))`);
    assert.equal(start.lab, path[0]);
    assert.equal(start.title, path[0]);
    assert.deepEqual(start.buttons, path, 'the lab list follows the path');
    await evaluate(`(() => { const t = document.getElementById('script'); t.value += '\\nput /extra 1\\n'; t.dispatchEvent(new Event('input', { bubbles: true })); return true; })()`);
    const edit = await evaluate<Seen>('__settled(2)');
    assert.equal(edit.lab, path[0]);
    assert.equal(edit.title, `${path[0]!} (edited)`);
    assert.equal(decodeFragment(edit.hash)?.lab, path[0]);
    await page.open('about:blank');
    await page.open(`${pathToFileURL(file).href}${edit.hash}`);
    await evaluate(HELPERS);
    const shared = await evaluate<Seen>('__settled(1)');
    assert.equal(shared.title, `${path[0]!} (edited)`, 'a shared link of an edited lab keeps its name');
    assert.equal(shared.editor, edit.editor);
  } finally {
    // Chromium writes its profile until it exits: close() ends its whole process group first.
    await page?.close();
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  }
});

test('the playground bundle needs no Node built-in', async () => {
  const js = await bundlePlayground();
  assert.ok(js.length > 10_000, 'the runner is in it');
  assert.doesNotMatch(js, /require\(\s*["']node:/);
  assert.doesNotMatch(js, /from\s*["']node:/);
  assert.doesNotMatch(js, /import\(\s*["']node:/);
});

test('the build fails loudly, naming the module and its importer, when the bundle would pull a Node built-in', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-playground-'));
  try {
    const entry = join(dir, 'entry.ts');
    writeFileSync(entry, "import { readFileSync } from 'node:fs';\nimport { runScenario } from '" + pathToFileURL(join(process.cwd(), 'src', 'scenario', 'runner.ts')).pathname + "';\nconsole.log(readFileSync, runScenario);\n");
    await assert.rejects(bundlePlayground(entry), (e: unknown) => e instanceof PlaygroundBuildError && e.message.includes('node:fs (imported by') && e.message.includes('entry.ts'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('etcdsim playground without --out serves the page on loopback and prints its URL', async () => {
  const child = spawn(process.execPath, [join('bin', 'etcdsim.js'), 'playground', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((ok) => child.once('exit', (code) => ok(code)));
  try {
    const url = await new Promise<string>((ok, fail) => {
      let seen = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (d: string) => {
        seen += d;
        const m = /# playground at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(seen);
        if (m !== null) ok(m[1]!);
      });
      child.once('exit', () => fail(new Error(`exited before listening: ${seen}`)));
    });
    const res = await fetch(url);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const page = await res.text();
    assert.match(page, /<title>etcdsim playground<\/title>/);
    assert.match(page, /id="lab-data"/);
    assert.equal((await fetch(new URL('/elsewhere', url))).status, 404);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
});

test('playground links: base64url of the UTF-8 script, the variant switch and the seed', () => {
  const script = 'put /k "héllo ✓"\n# a comment with + and / and ?\n';
  const frag = encodeFragment({ script, variant: 'bug' });
  assert.match(frag, /^#script=[A-Za-z0-9_-]+&variant=bug$/);
  assert.deepEqual(decodeFragment(frag), { script, variant: 'bug' });
  assert.equal(toBase64Url(script), NodeBuffer.from(script, 'utf8').toString('base64url'));
  assert.equal(fromBase64Url('!!'), undefined, 'not base64');
  assert.equal(fromBase64Url(NodeBuffer.from([0xff, 0xfe]).toString('base64url')), undefined, 'not UTF-8');
  assert.equal(decodeFragment('#other=1'), undefined);
  // The seed travels as &seed=N (absent for 0, so a seed-0 link reads as before); a malformed one is ignored.
  assert.equal(encodeFragment({ script, variant: undefined, seed: 0 }), encodeFragment({ script, variant: undefined }));
  assert.match(encodeFragment({ script, variant: 'bug', seed: 42 }), /&variant=bug&seed=42$/);
  assert.deepEqual(decodeFragment(encodeFragment({ script, variant: undefined, seed: 42 })), { script, variant: undefined, seed: 42 });
  assert.deepEqual(decodeFragment(`${encodeFragment({ script, variant: undefined })}&seed=-1`), { script, variant: undefined });
  // The lab the script came from travels as &lab=NAME, edited or not.
  assert.match(encodeFragment({ script, variant: undefined, seed: 3, lab: 'bugs/18089-x' }), /&seed=3&lab=bugs%2F18089-x$/);
  assert.deepEqual(decodeFragment(encodeFragment({ script, variant: undefined, lab: 'bugs/18089-x' })), { script, variant: undefined, lab: 'bugs/18089-x' });
  assert.equal(parseSeed('7'), 7);
  assert.equal(parseSeed(' 12 '), 12);
  for (const bad of ['', 'x', '-1', '1.5', '99999999999999999']) assert.equal(parseSeed(bad), undefined, bad);
});

test("the browser stand-ins for Node's Buffer and crypto give Node's bytes", () => {
  const bytes = Uint8Array.from([0, 1, 127, 128, 200, 255, 0x2f, 0x70]);
  for (const s of ['', 'a', 'hé✓ \u0000 /p/b', 'x'.repeat(10_000)]) {
    assert.deepEqual([...BrowserBuffer.from(s, 'utf8')], [...NodeBuffer.from(s, 'utf8')]);
    const b64 = NodeBuffer.from(s).toString('base64');
    assert.equal(BrowserBuffer.from(s).toString('base64'), b64);
    assert.deepEqual([...BrowserBuffer.from(b64, 'base64')], [...NodeBuffer.from(b64, 'base64')]);
  }
  assert.equal(BrowserBuffer.prototype.latin1Slice.call(bytes, 0, bytes.length), (NodeBuffer.prototype as unknown as { latin1Slice(this: Uint8Array, a: number, b: number): string }).latin1Slice.call(bytes, 0, bytes.length));
  assert.equal(BrowserBuffer.from(bytes.buffer, 2, 3).toString('hex'), NodeBuffer.from(bytes.buffer, 2, 3).toString('hex'));
  for (const [x, y] of [[[], []], [[1], []], [[1, 2], [1, 3]], [[2], [1, 9]], [[255], [255]]] as const) {
    assert.equal(BrowserBuffer.compare(Uint8Array.from(x), Uint8Array.from(y)), NodeBuffer.compare(Uint8Array.from(x), Uint8Array.from(y)));
  }
  assert.deepEqual([...BrowserBuffer.concat([bytes, BrowserBuffer.from([9])])], [...NodeBuffer.concat([bytes, NodeBuffer.from([9])])]);
  const pages = BrowserBuffer.alloc(8);
  BrowserBuffer.from('ab').copy(pages);
  assert.equal((pages.subarray(0, pages.indexOf(0)) as BrowserBuffer).toString('utf8'), 'ab');
  for (const s of ['', 'abc', 'x'.repeat(1000)]) {
    assert.deepEqual([...browserCrypto.createHash('sha256').update(s).update(bytes).digest()], [...createHash('sha256').update(s).update(bytes).digest()]);
    assert.deepEqual([...browserCrypto.createHash('sha1').update(s).update(bytes).digest()], [...createHash('sha1').update(s).update(bytes).digest()]);
  }
  assert.deepEqual([...browserCrypto.pbkdf2Sync('pw', 'salt', 16, 32, 'sha256')], [...pbkdf2Sync('pw', 'salt', 16, 32, 'sha256')]);
  assert.equal(browserCrypto.timingSafeEqual(bytes, Uint8Array.from(bytes)), true);
});

/** A shared cluster lab: three members, a lagging follower, a watch on it. */
const CLUSTER_LAB = ['## A cluster lab: a watch on a lagging follower.', 'members 3', 'lag infra3 1s', 'watch F /c/ --prefix --endpoints=infra3', 'put /c/a 1', 'advance 1s', 'expect watch F events == [PUT /c/a@2]', ''].join('\n');

test('headless Chromium: a shared link with members 3 runs the cluster in the page, draws its members, reruns on edit; the cluster and bug labs are one click away', { skip: requireChromium(), timeout: 120_000 }, async () => {
  const chromium = findChromium()!;
  const dir = mkdtempSync(join(tmpdir(), 'etcdsim-playground-'));
  const out: string[] = [];
  const shots = screenshotDir(dir);
  mkdirSync(shots, { recursive: true });
  let page: BrowserPage | undefined;
  try {
    assert.equal(await runCli(['playground', '--out', join(dir, 'page')], { out: (l) => out.push(l), err: (l) => out.push(l) }), 0, out.join('\n'));
    const file = join(dir, 'page', 'index.html');
    page = await startBrowser(chromium, dir, 1400);
    const evaluate = page.evaluate.bind(page) as <T>(expression: string) => Promise<T>;
    await page.open(`${pathToFileURL(file).href}${encodeFragment({ script: CLUSTER_LAB, variant: undefined })}`);
    await evaluate(HELPERS);
    const members = `(() => { const fd = document.getElementById('timeline').contentDocument; return {
      rows: [...fd.querySelectorAll('.time-strip .member-time')].map((e) => e.dataset.member),
      levers: [...fd.querySelectorAll('.time-strip .t-lever')].map((e) => e.dataset.kind + '@' + e.dataset.member),
      leaders: [...fd.querySelectorAll('.time-strip .t-leader')].map((e) => e.dataset.member + ':' + e.dataset.term),
      lanes: [...fd.querySelectorAll('svg.timeline .lane-label')].map((e) => e.textContent),
    }; })()`;
    interface Members {
      rows: string[];
      levers: string[];
      leaders: string[];
      lanes: string[];
    }

    // 1. The shared link: the cluster ran in the browser, as it runs on Node, and its members are drawn.
    const first = await evaluate<Seen>('__settled(1)');
    assert.equal(first.editor, CLUSTER_LAB);
    assert.equal(first.ok, 'true', first.transcript);
    assert.equal(first.frameErrors, '0');
    assert.equal(first.transcript, runScenario(CLUSTER_LAB).transcript.join('\n'), 'the browser run prints what the Node run prints');
    assert.match(first.transcript, /^# a simulated cluster of 3 members \(infra1, infra2, infra3\)/m);
    const drawn = await evaluate<Members>(members);
    assert.deepEqual(drawn.rows, ['infra1', 'infra2', 'infra3']);
    assert.deepEqual(drawn.levers, ['lag@infra3']);
    assert.deepEqual(drawn.leaders, ['infra1:2']);
    assert.ok(drawn.lanes.includes('watch F /c/* @infra3'), drawn.lanes.join(' | '));

    // 2. An edit adds levers: the page reruns, the new marks are drawn, the link follows.
    const edited = CLUSTER_LAB.replace('put /c/a 1\n', 'put /c/a 1\npause infra2\nmove-leader infra3\n');
    await evaluate(`(() => { const t = document.getElementById('script'); t.value = ${JSON.stringify(edited)}; t.dispatchEvent(new Event('input', { bubbles: true })); return true; })()`);
    const second = await evaluate<Seen>('__settled(2)');
    assert.equal(second.ok, 'true', second.transcript);
    assert.equal(decodeFragment(second.hash)?.script, edited, 'the link carries the edit');
    const redrawn = await evaluate<Members>(members);
    assert.deepEqual(redrawn.levers, ['pause@infra2', 'lag@infra3', 'move-leader@infra3'], 'row by row: infra2, then infra3');
    assert.deepEqual(redrawn.leaders, ['infra1:2', 'infra3:3'], 'the transfer elected infra3 at term 3');
    for (const width of [1400, 800]) {
      await page.resize(width);
      assert.equal(await evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth'), 0, `@${width}: no sideways scroll`);
      assert.ok((await page.screenshot(join(shots, `playground-cluster-${width}.png`))) > 10_000);
    }

    // 3. The labs: the cluster labs have a group of their own; the new bug labs are with the bugs; one click runs one.
    const groups = await evaluate<{ heading: string; labs: string[] }[]>(
      `[...document.querySelectorAll('#labs h2')].map((h) => ({ heading: h.textContent, labs: [...h.nextElementSibling.querySelectorAll('button')].map((b) => b.dataset.lab) }))`,
    );
    const cluster = groups.find((gr) => gr.heading.startsWith('Cluster labs'));
    assert.deepEqual(cluster?.labs.sort(), listBundledScenarios().filter((s) => s.name.startsWith('cluster/')).map((s) => s.name).sort());
    const bugs = groups.find((gr) => gr.heading.startsWith('Bugs'))!.labs;
    assert.ok(bugs.includes('bugs/19179-lone-tombstone-lost-on-restart') && bugs.includes('bugs/20221-native-snapshot-on-slow-follower'), bugs.join(', '));
    await evaluate(`document.querySelector('button[data-lab="cluster/leases-across-leader-change"]').click(), true`);
    const lab = await evaluate<Seen>('__settled(3)');
    assert.equal(lab.ok, 'true', lab.transcript);
    assert.equal(lab.lab, 'cluster/leases-across-leader-change');
    assert.deepEqual((await evaluate<Members>(members)).leaders, ['infra1:2', 'infra2:3']);
  } finally {
    await page?.close();
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  }
});
