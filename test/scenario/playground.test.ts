/**
 * The browser playground (`etcdsim playground`): the page is written with --out and opened from file:// in
 * headless Chromium, driven over the DevTools protocol (--remote-debugging-pipe: NUL-separated JSON on file
 * descriptors 3 and 4). A shared `#script=` link runs its lab; an edit reruns it, redraws the timeline and
 * updates the link; a bundled lab and a bug switch are one click each. On the Node side: the bundle needs no
 * Node built-in, and the browser stand-ins for Node's Buffer and crypto give Node's bytes.
 * Chromium is needed for the browser test: without it the test skips outside CI and fails in CI
 * (test/support/prerequisites.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, pbkdf2Sync } from 'node:crypto';
import { Buffer as NodeBuffer } from 'node:buffer';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { runCli } from '../../src/cli/program.js';
import { listBundledScenarios } from '../../src/cli/run_command.js';
import { bundlePlayground, PlaygroundBuildError } from '../../src/playground/build_page.js';
import { runScenario } from '../../src/scenario/index.js';
import { Buffer as BrowserBuffer } from '../../src/playground/browser/bytes_platform.js';
import * as browserCrypto from '../../src/playground/browser/crypto_platform.js';
import { decodeFragment, encodeFragment, fromBase64Url, toBase64Url } from '../../src/playground/fragment.js';
import { findChromium, requireChromium } from '../support/prerequisites.js';

/** A tiny lab: two writes under a watch. */
const LAB = ['## A tiny lab: two puts under a watch.', 'watch W /t/ --prefix', 'put /t/a 1', 'put /t/b 2', 'expect watch W events == [PUT /t/a@2, PUT /t/b@3]', ''].join('\n');

/** A DevTools protocol connection over Chromium's debugging pipe. */
class Cdp {
  private nextId = 1;
  private buffered = '';
  private readonly waiting = new Map<number, { ok: (v: unknown) => void; fail: (e: Error) => void }>();
  private readonly listeners: { method: string; ok: () => void }[] = [];

  constructor(private readonly child: ChildProcess) {
    const incoming = child.stdio[4] as Readable;
    incoming.setEncoding('utf8');
    incoming.on('data', (chunk: string) => {
      this.buffered += chunk;
      let end: number;
      while ((end = this.buffered.indexOf('\0')) >= 0) {
        const msg = JSON.parse(this.buffered.slice(0, end)) as { id?: number; method?: string; result?: unknown; error?: { message: string } };
        this.buffered = this.buffered.slice(end + 1);
        if (msg.method !== undefined) {
          for (const l of this.listeners.splice(0).filter((x) => x.method === msg.method || !this.listeners.push(x))) l.ok();
          continue;
        }
        const w = msg.id !== undefined ? this.waiting.get(msg.id) : undefined;
        if (w === undefined) continue;
        this.waiting.delete(msg.id!);
        if (msg.error !== undefined) w.fail(new Error(msg.error.message));
        else w.ok(msg.result);
      }
    });
  }

  /** Resolves on the next event named `method`. */
  next(method: string): Promise<void> {
    return new Promise((ok) => this.listeners.push({ method, ok }));
  }

  send<T>(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((ok, fail) => {
      this.waiting.set(id, { ok: ok as (v: unknown) => void, fail });
      (this.child.stdio[3] as Writable).write(JSON.stringify({ id, method, params, ...(sessionId !== undefined ? { sessionId } : {}) }) + '\0');
    });
  }
}

/** Evaluates `expression` in the page (awaiting a promise it returns); its JSON value. */
async function evaluate<T>(cdp: Cdp, session: string, expression: string): Promise<T> {
  const r = await cdp.send<{ result: { value?: T }; exceptionDetails?: { text: string; exception?: { description?: string } } }>(
    'Runtime.evaluate',
    { expression, awaitPromise: true, returnByValue: true },
    session,
  );
  if (r.exceptionDetails !== undefined) throw new Error(`in the page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
  return r.result.value as T;
}

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
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  try {
    assert.equal(await runCli(['playground', '--out', join(dir, 'page')], { out: (l) => out.push(l), err: (l) => out.push(l) }), 0, out.join('\n'));
    const file = join(dir, 'page', 'index.html');
    assert.match(out.join('\n'), /# playground written to .*index\.html/);
    const page = readFileSync(file, 'utf8');
    assert.doesNotMatch(page, /<script[^>]+src=|<link[^>]+href=/, 'self-contained: no script or style loaded from elsewhere');

    const link = `${pathToFileURL(file).href}#script=${toBase64Url(LAB)}`;
    // No background work that writes into the profile after the page is done (component updates, sync), and
    // a process group of its own, so that cleanup can end every Chromium process, not just the browser's.
    const quiet = ['--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-breakpad'];
    child = spawn(chromium, ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', ...quiet, '--remote-debugging-pipe', '--window-size=1400,900', `--user-data-dir=${join(dir, 'profile')}`, 'about:blank'], {
      stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const running = child;
    exited = new Promise<void>((ok) => running.once('exit', () => ok()));
    const cdp = new Cdp(child);
    const { targetInfos } = await cdp.send<{ targetInfos: { targetId: string; type: string; url: string }[] }>('Target.getTargets');
    const target = targetInfos.find((t) => t.type === 'page') ?? { targetId: (await cdp.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank' })).targetId };
    const { sessionId } = await cdp.send<{ sessionId: string }>('Target.attachToTarget', { targetId: target.targetId, flatten: true });
    // Open the shared link the way a learner does, and wait for the page's load event.
    await cdp.send('Page.enable', {}, sessionId);
    const loaded = cdp.next('Page.loadEventFired');
    await cdp.send('Page.navigate', { url: link }, sessionId);
    await loaded;
    await evaluate(cdp, sessionId, HELPERS);

    // 1. The shared link: its script is in the editor, ran, and is drawn.
    const first = await evaluate<Seen>(cdp, sessionId, '__settled(1)');
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
    await evaluate(cdp, sessionId, `(() => { const t = document.getElementById('script'); t.value = ${JSON.stringify(edited)}; t.dispatchEvent(new Event('input', { bubbles: true })); return true; })()`);
    const second = await evaluate<Seen>(cdp, sessionId, '__settled(2)');
    assert.equal(second.ok, 'true', second.transcript);
    assert.equal(second.writes, 3, 'the delete is a third write mark');
    assert.match(second.transcript, /^\[watch W @4\] DELETE\n\[watch W @4\] \/t\/a$/m);
    assert.equal(second.hash, encodeFragment({ script: edited, variant: undefined }), 'the link now carries the edited script');
    assert.equal(decodeFragment(second.hash)?.script, edited);

    // 3. A bundled lab, one click.
    await evaluate(cdp, sessionId, `document.querySelector('button[data-lab="txn-one-revision"]').click(), true`);
    const third = await evaluate<Seen>(cdp, sessionId, '__settled(3)');
    assert.equal(third.lab, 'txn-one-revision');
    assert.equal(third.ok, 'true', third.transcript);
    assert.equal(third.editor, readFileSync(join('scenarios', 'txn-one-revision.etcdsim'), 'utf8'));
    assert.equal(third.title, 'txn-one-revision');
    assert.ok(third.writes > 0);
    assert.equal(decodeFragment(third.hash)?.script, third.editor, 'the link follows the lab');

    // 4. A bug pair, then its bug switch: only the `bug` variant runs, and the link says so.
    await evaluate(cdp, sessionId, `document.querySelector('button[data-lab="bugs/20229-progress-below-future-start"]').click(), true`);
    const fourth = await evaluate<Seen>(cdp, sessionId, '__settled(4)');
    assert.deepEqual(fourth.runSections, ['bug', 'fixed'], 'both variants side by side');
    assert.ok(fourth.linksOut > 0, 'the bug page links its etcd issue and PR');
    assert.equal(fourth.linksInFrame, 0, 'links out open beside the playground, not inside its frame');
    await evaluate(cdp, sessionId, `document.querySelector('#variants input[data-variant="bug"]').click(), true`);
    const fifth = await evaluate<Seen>(cdp, sessionId, '__settled(5)');
    assert.equal(fifth.variant, 'bug');
    assert.deepEqual(fifth.runSections, ['bug'], 'only the bug variant ran');
    assert.match(fifth.transcript, /^=== variant bug: progressRespectsStartRev=false ===$/m);
    assert.doesNotMatch(fifth.transcript, /=== variant fixed/);
    assert.deepEqual(decodeFragment(fifth.hash), { script: fourth.editor, variant: 'bug' });

    // 5. Every bundled lab and bug pair, run in the browser, prints what the same run prints on Node.
    const inBrowser = await evaluate<Record<string, string>>(
      cdp,
      sessionId,
      `(() => { const out = {}; for (const b of document.querySelectorAll('#labs button')) { b.click(); out[b.dataset.lab] = document.getElementById('transcript').textContent + '\\n' + document.documentElement.dataset.ok; } return out; })()`,
    );
    const bundled = listBundledScenarios();
    assert.deepEqual(Object.keys(inBrowser).sort(), bundled.map((s) => s.name).sort(), 'every bundled scenario is one click away');
    for (const s of bundled) {
      const onNode = runScenario(readFileSync(s.path, 'utf8'));
      assert.equal(inBrowser[s.name], `${onNode.transcript.join('\n')}\n${String(onNode.ok)}`, `${s.name}: the browser run differs from the Node run`);
    }
    await cdp.send('Browser.close');
  } finally {
    // Chromium writes its profile until it exits: end its whole process group and wait for the browser
    // before removing the directory.
    if (child?.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is gone already
      }
    }
    await exited;
    // Its helper processes (crashpad, zygote) may still be closing files in the profile for a moment.
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

test('playground links: base64url of the UTF-8 script, and the variant switch', () => {
  const script = 'put /k "héllo ✓"\n# a comment with + and / and ?\n';
  const frag = encodeFragment({ script, variant: 'bug' });
  assert.match(frag, /^#script=[A-Za-z0-9_-]+&variant=bug$/);
  assert.deepEqual(decodeFragment(frag), { script, variant: 'bug' });
  assert.equal(toBase64Url(script), NodeBuffer.from(script, 'utf8').toString('base64url'));
  assert.equal(fromBase64Url('!!'), undefined, 'not base64');
  assert.equal(fromBase64Url(NodeBuffer.from([0xff, 0xfe]).toString('base64url')), undefined, 'not UTF-8');
  assert.equal(decodeFragment('#other=1'), undefined);
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
