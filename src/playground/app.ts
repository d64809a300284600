/**
 * The playground's script, bundled for the browser (scripts/build.mjs → dist/playground/index.html): the
 * scenario runner itself (runScenario, the same one `etcdsim run` uses) runs in the page on every edit, and
 * the result is drawn by timeline.ts's renderHtml — the page `etcdsim run --html` writes — inside a frame
 * beside the editor. Runs are deterministic (virtual time, seed 0), so a script and a variant are all a link
 * needs: the fragment carries them (`#script=` + base64url of the UTF-8 text, `&variant=NAME`), and opening
 * such a link runs it.
 *
 * Lib "dom" is not part of this project's type-check (the engine must not lean on it), so the few browser
 * objects used here are described by the small interfaces below.
 */
import { parseScenario } from '../scenario/parser.js';
import { runScenario } from '../scenario/runner.js';
import { renderHtml } from '../scenario/timeline.js';
import { decodeFragment, encodeFragment, type PlaygroundState } from './fragment.js';

/** A bundled scenario as the page embeds it (see build_page.ts). */
export interface EmbeddedLab {
  readonly name: string;
  readonly summary: string;
  readonly text: string;
}

interface El {
  value: string;
  textContent: string | null;
  hidden: boolean;
  checked: boolean;
  className: string;
  title: string;
  srcdoc: string;
  readonly dataset: Record<string, string | undefined>;
  readonly style: Record<string, string>;
  readonly contentDocument: { readonly documentElement: { readonly scrollHeight: number }; querySelectorAll(selector: string): Iterable<El> } | null;
  addEventListener(type: string, fn: () => void): void;
  appendChild(child: El): El;
  replaceChildren(...children: El[]): void;
  setAttribute(name: string, value: string): void;
}

interface PageGlobals {
  readonly document: { getElementById(id: string): El | null; createElement(tag: string): El; readonly documentElement: El };
  readonly location: { readonly hash: string; readonly href: string };
  readonly history: { replaceState(data: null, unused: string, url: string): void };
  addEventListener(type: string, fn: () => void): void;
  setTimeout(fn: () => void, ms: number): number;
  clearTimeout(id: number): void;
}

const g = globalThis as unknown as PageGlobals;
const doc = g.document;

function byId(id: string): El {
  const e = doc.getElementById(id);
  if (e === null) throw new Error(`playground: the page has no #${id}`);
  return e;
}

/** Runs come this long after the last keystroke: short enough to feel live, long enough not to run per key. */
const DEBOUNCE_MS = 150;

const editor = byId('script');
const transcript = byId('transcript');
const frame = byId('timeline');
const status = byId('status');
const switches = byId('variants');
const labList = byId('labs');
// Labs first, then the bug pairs (each a `bug` and a `fixed` variant of one script).
const labs = (JSON.parse(byId('lab-data').textContent ?? '[]') as EmbeddedLab[]).sort((a, b) => Number(a.name.startsWith('bugs/')) - Number(b.name.startsWith('bugs/')));

/** What is on screen: the script, the variant switch, the lab it came from (if unchanged). */
let state: PlaygroundState = { script: '', variant: undefined };
let labName: string | undefined;
let pending: number | undefined;
let runs = 0;

/** The variants a script declares (none when it does not parse: the run reports why). */
function declaredVariants(script: string): string[] {
  try {
    return parseScenario(script).settings.variants.map((v) => v.name);
  } catch {
    return [];
  }
}

/** Runs the editor's script and redraws everything; the fragment follows when `share` is set. */
function run(share: boolean): void {
  const script = editor.value;
  state = { script, variant: state.variant };
  const title = labName ?? 'playground';
  // Offer the variants the script declares; a switch left over from another script is dropped.
  const declared = declaredVariants(script);
  if (state.variant !== undefined && !declared.includes(state.variant)) state = { script, variant: undefined };
  const result = state.variant === undefined ? runScenario(script, { title }) : runScenario(script, { title, variant: state.variant });
  drawSwitches(declared);
  const lines = [...result.transcript];
  if (result.failure !== undefined) {
    const f = result.failure;
    lines.push('', `# ${f.kind === 'syntax' ? 'syntax error' : f.kind === 'expectation' ? 'expectation failed' : 'error'} at line ${f.line}${f.variant !== undefined ? ` [${f.variant}]` : ''}: ${f.message}`);
  }
  transcript.textContent = lines.join('\n');
  const pages = result.runs.length > 0 ? result.runs.map((r) => ({ model: r.timeline, transcript: r.transcript })) : [{ model: result.timeline, transcript: result.transcript }];
  frame.srcdoc = renderHtml(title, pages);
  status.textContent = result.ok ? `ok: ${result.runs.length} run${result.runs.length === 1 ? '' : 's'}, every expectation held` : `failed at line ${result.failure?.line ?? 0}`;
  status.className = result.ok ? 'ok' : 'failed';
  runs += 1;
  const d = doc.documentElement.dataset;
  d['runs'] = String(runs);
  d['ok'] = String(result.ok);
  d['variant'] = state.variant ?? '';
  d['lab'] = labName ?? '';
  if (share) g.history.replaceState(null, '', encodeFragment(state));
}

/** The bug switches: one radio per declared variant, plus "every variant". */
function drawSwitches(declared: readonly string[]): void {
  const items: El[] = [];
  for (const v of [undefined, ...declared]) {
    const label = doc.createElement('label');
    const input = doc.createElement('input');
    input.setAttribute('type', 'radio');
    input.setAttribute('name', 'variant');
    input.dataset['variant'] = v ?? '';
    input.checked = v === state.variant;
    input.addEventListener('change', () => {
      state = { script: state.script, variant: v };
      run(true);
    });
    label.appendChild(input);
    const text = doc.createElement('span');
    text.textContent = v ?? 'every variant';
    label.appendChild(text);
    items.push(label);
  }
  switches.replaceChildren(...(declared.length > 0 ? items : []));
  switches.hidden = declared.length === 0;
}

/** The bundled labs and bug pairs, one button each. */
function drawLabs(): void {
  const groups = new Map<string, El[]>();
  for (const lab of labs) {
    const group = lab.name.startsWith('bugs/') ? 'Bugs (switch bug / fixed)' : 'Labs';
    const b = doc.createElement('button');
    b.setAttribute('type', 'button');
    b.dataset['lab'] = lab.name;
    b.textContent = lab.name.replace(/^bugs\//, '');
    b.title = lab.summary;
    b.addEventListener('click', () => {
      labName = lab.name;
      editor.value = lab.text;
      state = { script: lab.text, variant: undefined };
      run(true);
    });
    groups.set(group, [...(groups.get(group) ?? []), b]);
  }
  const out: El[] = [];
  for (const [name, buttons] of groups) {
    const h = doc.createElement('h2');
    h.textContent = name;
    const list = doc.createElement('div');
    list.className = 'lab-buttons';
    list.replaceChildren(...buttons);
    out.push(h, list);
  }
  labList.replaceChildren(...out);
}

/** Loads what the fragment says (a shared link), or the first lab when it says nothing. */
function load(): void {
  const fromLink = decodeFragment(g.location.hash);
  if (fromLink !== undefined) {
    state = fromLink;
    editor.value = fromLink.script;
    labName = labs.find((l) => l.text === fromLink.script)?.name;
    run(false);
    return;
  }
  const first = labs[0];
  labName = first?.name;
  editor.value = first?.text ?? '';
  state = { script: editor.value, variant: undefined };
  run(false);
}

editor.addEventListener('input', () => {
  if (pending !== undefined) g.clearTimeout(pending);
  pending = g.setTimeout(() => {
    pending = undefined;
    if (labName !== undefined && labs.find((l) => l.name === labName)?.text !== editor.value) labName = undefined;
    run(true);
  }, DEBOUNCE_MS);
});
// The frame grows to its page's height, so the page scrolls as one.
frame.addEventListener('load', () => {
  const page = frame.contentDocument;
  if (page === null) return;
  frame.style['height'] = `${page.documentElement.scrollHeight + 20}px`;
  // Links out of the page (etcd issues and PRs) open beside the playground instead of inside the frame.
  for (const a of page.querySelectorAll('a[href^="http"]')) {
    a.setAttribute('target', '_blank');
    a.setAttribute('rel', 'noopener');
  }
});
// A link pasted into the address bar of an open playground.
g.addEventListener('hashchange', () => {
  const s = decodeFragment(g.location.hash);
  if (s !== undefined && (s.script !== editor.value || s.variant !== state.variant)) load();
});
drawLabs();
load();
