/**
 * Headless Chromium driven over the DevTools protocol (--remote-debugging-pipe: NUL-separated JSON on file
 * descriptors 3 and 4), for the page and playground tests: open a URL at a window width, evaluate in the
 * page, move and click the real mouse (Input.dispatchMouseEvent, so the page's own hover and click handlers
 * run as a user's would), take a screenshot, and end every Chromium process before the profile is removed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';

/** A DevTools protocol connection over Chromium's debugging pipe. */
export class Cdp {
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

/** One page in a headless Chromium of its own. */
export interface BrowserPage {
  readonly cdp: Cdp;
  readonly session: string;
  /** Evaluates `expression` in the page (awaiting a promise it returns); its JSON value. */
  evaluate<T>(expression: string): Promise<T>;
  /** Loads `url` and waits for its load event. */
  open(url: string): Promise<void>;
  /** Sets the viewport (CSS px) as a window of that size would. */
  resize(width: number, height?: number): Promise<void>;
  /** Moves the mouse to the centre of the first element `selector` matches (scrolled into view first); false when none. */
  hover(selector: string, frameSelector?: string): Promise<boolean>;
  /** Clicks the centre of the first element `selector` matches; false when none. */
  click(selector: string, frameSelector?: string): Promise<boolean>;
  /** A PNG of the viewport, written to `file`; its size in bytes. */
  screenshot(file: string): Promise<number>;
  /** Ends Chromium (its whole process group) and removes its profile. */
  close(): Promise<void>;
}

/**
 * In-page: the centre of the first match of `sel` (inside the iframe `frameSel` when given), in the top page's
 * viewport coordinates, after scrolling it into view (the page, and any box that scrolls around it).
 */
function centreOf(sel: string, frameSel: string | undefined): string {
  return `(() => {
    const frame = ${frameSel !== undefined ? `document.querySelector(${JSON.stringify(frameSel)})` : 'null'};
    const doc = frame ? frame.contentDocument : document;
    const el = doc.querySelector(${JSON.stringify(sel)});
    if (!el) return null;
    if (frame) frame.scrollIntoView({ block: 'center', inline: 'nearest' });
    el.scrollIntoView({ block: 'center', inline: 'center' });
    const r = el.getBoundingClientRect();
    const f = frame ? frame.getBoundingClientRect() : { left: 0, top: 0 };
    return { x: f.left + r.left + r.width / 2, y: f.top + r.top + r.height / 2 };
  })()`;
}

/** Starts a headless Chromium with an empty page, a profile under `dir`, and a window `width` px wide. */
export async function startBrowser(chromium: string, dir: string, width: number, height = 900): Promise<BrowserPage> {
  // No background work that writes into the profile after the page is done (component updates, sync), and
  // a process group of its own, so that cleanup can end every Chromium process, not just the browser's.
  const quiet = ['--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-breakpad'];
  const profile = mkdtempSync(join(dir, `profile-${width}-`));
  const child = spawn(
    chromium,
    ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--hide-scrollbars', ...quiet, '--remote-debugging-pipe', `--window-size=${width},${height}`, `--user-data-dir=${profile}`, 'about:blank'],
    { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'], detached: true },
  );
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  const cdp = new Cdp(child);
  const { targetInfos } = await cdp.send<{ targetInfos: { targetId: string; type: string }[] }>('Target.getTargets');
  const target = targetInfos.find((t) => t.type === 'page') ?? { targetId: (await cdp.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank' })).targetId };
  const { sessionId } = await cdp.send<{ sessionId: string }>('Target.attachToTarget', { targetId: target.targetId, flatten: true });
  await cdp.send('Page.enable', {}, sessionId);
  const evaluate = async <T>(expression: string): Promise<T> => {
    const r = await cdp.send<{ result: { value?: T }; exceptionDetails?: { text: string; exception?: { description?: string } } }>(
      'Runtime.evaluate',
      { expression, awaitPromise: true, returnByValue: true },
      sessionId,
    );
    if (r.exceptionDetails !== undefined) throw new Error(`in the page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value as T;
  };
  const mouse = async (selector: string, frameSelector: string | undefined, click: boolean): Promise<boolean> => {
    const at = await evaluate<{ x: number; y: number } | null>(centreOf(selector, frameSelector));
    if (at === null) return false;
    await cdp.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: at.x, y: at.y }, sessionId);
    if (click) {
      await cdp.send('Input.dispatchMouseEvent', { type: 'mousePressed', x: at.x, y: at.y, button: 'left', clickCount: 1 }, sessionId);
      await cdp.send('Input.dispatchMouseEvent', { type: 'mouseReleased', x: at.x, y: at.y, button: 'left', clickCount: 1 }, sessionId);
    }
    return true;
  };
  return {
    cdp,
    session: sessionId,
    evaluate,
    async open(url) {
      const loaded = cdp.next('Page.loadEventFired');
      await cdp.send('Page.navigate', { url }, sessionId);
      await loaded;
    },
    async resize(w, h = height) {
      await cdp.send('Emulation.setDeviceMetricsOverride', { width: w, height: h, deviceScaleFactor: 1, mobile: false }, sessionId);
    },
    hover: (selector, frameSelector) => mouse(selector, frameSelector, false),
    click: (selector, frameSelector) => mouse(selector, frameSelector, true),
    async screenshot(file) {
      const { data } = await cdp.send<{ data: string }>('Page.captureScreenshot', { format: 'png' }, sessionId);
      const png = Buffer.from(data, 'base64');
      writeFileSync(file, png);
      return png.byteLength;
    },
    async close() {
      try {
        await Promise.race([cdp.send('Browser.close'), exited]);
      } catch {
        // already gone
      }
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // the group is gone already
        }
      }
      await exited;
      // Its helper processes (crashpad, zygote) may still be closing files in the profile for a moment.
      rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
    },
  };
}

/** Where a test keeps its screenshots: ETCDSIM_SCREENSHOTS when set (CI keeps them as artifacts), else `dir`. */
export function screenshotDir(dir: string): string {
  return process.env['ETCDSIM_SCREENSHOTS'] ?? dir;
}
