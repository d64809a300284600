/**
 * The playground's script, bundled for the browser (scripts/build.mjs → dist/playground/index.html): the
 * scenario runner itself (runScenario, the same one `etcdsim run` uses) runs in the page on every edit, and
 * the result is drawn by the timeline folder's renderHtml — the page `etcdsim run --html` writes — inside a frame
 * beside the editor. Runs are deterministic (virtual time, a seed for lease IDs), so a script, a variant and
 * a seed are all a link needs: the fragment carries them (`#script=` + base64url of the UTF-8 text,
 * `&variant=NAME`, `&seed=N`), and opening such a link runs it. The transcript beside the editor is linked
 * with the timeline in the frame both ways: hovering or clicking a line lights up its marks, and a mark
 * hovered or clicked in the frame lights up its lines here, scrolled into view.
 *
 * Lib "dom" is not part of this project's type-check (the engine must not lean on it), so the few browser
 * objects used here are described by the small interfaces below.
 */
import { parseScenario, runScenario, renderHtml, transcriptHtml } from '../scenario/index.js';
import { decodeFragment, encodeFragment, parseSeed, type PlaygroundState } from './fragment.js';

/** A bundled scenario as the page embeds it (see build_page.ts). */
export interface EmbeddedLab {
  readonly name: string;
  readonly summary: string;
  readonly text: string;
}

interface El {
  value: string;
  textContent: string | null;
  innerHTML: string;
  scrollTop: number;
  readonly offsetTop: number;
  readonly clientHeight: number;
  readonly classList: { add(c: string): void; remove(c: string): void; toggle(c: string, on: boolean): void };
  closest(selector: string): El | null;
  getAttribute(name: string): string | null;
  querySelectorAll(selector: string): Iterable<El>;
  hidden: boolean;
  checked: boolean;
  className: string;
  title: string;
  srcdoc: string;
  readonly dataset: Record<string, string | undefined>;
  readonly style: Record<string, string>;
  readonly contentDocument: FrameDocument | null;
  readonly contentWindow: { etcdsimSelect?: (run: number, line: number, ref: string, sticky: boolean) => number } | null;
  addEventListener(type: string, fn: (e: PageEvent) => void): void;
  appendChild(child: El): El;
  replaceChildren(...children: El[]): void;
  setAttribute(name: string, value: string): void;
}

/** A DOM event, as far as the playground reads one: its target, and the detail of the frame's `etcdsim-select`. */
interface PageEvent {
  readonly target: El | null;
  readonly detail?: { readonly run: number; readonly line: number; readonly ref: string; readonly sticky: boolean };
}

/** The timeline page in the frame (same origin: srcdoc). */
interface FrameDocument {
  readonly documentElement: { readonly scrollHeight: number };
  querySelectorAll(selector: string): Iterable<El>;
  addEventListener(type: string, fn: (e: PageEvent) => void): void;
}

interface PageGlobals {
  readonly document: { getElementById(id: string): El | null; createElement(tag: string): El; readonly documentElement: El; title: string };
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
const seedField = byId('seed');
const gutter = byId('gutter');
const labList = byId('labs');
/** The lab list's groups, in their order: a lab's group is given by its directory (bugs/, cluster/, none). */
const LAB_GROUPS: readonly { readonly dir: string; readonly heading: string }[] = [
  { dir: '', heading: 'Labs' },
  { dir: 'cluster/', heading: 'Cluster labs (members 3: levers, elections, per-member views)' },
  { dir: 'bugs/', heading: 'Bugs (switch bug / fixed)' },
];

/** The index in LAB_GROUPS of a lab's group. */
function groupOf(name: string): number {
  const i = LAB_GROUPS.findIndex((gr) => gr.dir !== '' && name.startsWith(gr.dir));
  return i < 0 ? 0 : i;
}

// Labs first, then the cluster labs, then the bug pairs (each a `bug` and a `fixed` variant of one script); within
// each group in the order of the suggested path (scenarios/path.txt), which is the order they are embedded in.
const labs = (JSON.parse(byId('lab-data').textContent ?? '[]') as EmbeddedLab[]).sort((a, b) => groupOf(a.name) - groupOf(b.name));

/** What is on screen: the script, the variant switch, the seed, the lab it came from (if unchanged). */
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
  numberLines();
  const seed = state.seed ?? 0;
  // Offer the variants the script declares; a switch left over from another script is dropped.
  const declared = declaredVariants(script);
  const variant = state.variant !== undefined && declared.includes(state.variant) ? state.variant : undefined;
  state = { script, variant, ...(seed !== 0 ? { seed } : {}), ...(labName !== undefined ? { lab: labName } : {}) };
  seedField.value = String(seed);
  // The lab's name stays through edits (and in the link), marked as edited once the script is not the lab's.
  const title = labName === undefined ? 'playground' : labs.find((l) => l.name === labName)?.text === script ? labName : `${labName} (edited)`;
  doc.title = `${title} · etcdsim playground`;
  const result = variant === undefined ? runScenario(script, { title, seed }) : runScenario(script, { title, variant, seed });
  drawSwitches(declared);
  const lines = [...result.transcript];
  if (result.failure !== undefined) {
    const f = result.failure;
    lines.push('', `# ${f.kind === 'syntax' ? 'syntax error' : f.kind === 'expectation' ? 'expectation failed' : 'error'} at line ${f.line}${f.variant !== undefined ? ` [${f.variant}]` : ''}: ${f.message}`);
  }
  // One span per line, linked to the run and script line that printed it (the text is unchanged).
  const links = [...result.transcriptLinks, ...lines.slice(result.transcriptLinks.length).map(() => ({ run: -1, line: 0 }))];
  transcript.innerHTML = transcriptHtml(
    lines,
    links.map((l) => l.line),
    links.map((l) => l.run),
  );
  const pages = result.runs.length > 0 ? result.runs.map((r) => ({ model: r.timeline, transcript: r.transcript })) : [{ model: result.timeline, transcript: result.transcript }];
  frame.srcdoc = renderHtml(title, pages);
  status.textContent = result.ok ? `ok: ${result.runs.length} run${result.runs.length === 1 ? '' : 's'}, every expectation held` : `failed at line ${result.failure?.line ?? 0}`;
  status.className = result.ok ? 'ok' : 'failed';
  runs += 1;
  const d = doc.documentElement.dataset;
  d['runs'] = String(runs);
  d['ok'] = String(result.ok);
  d['variant'] = state.variant ?? '';
  d['seed'] = String(seed);
  d['lab'] = labName ?? '';
  d['title'] = title;
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
      state = { ...state, variant: v };
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
    const { dir, heading: group } = LAB_GROUPS[groupOf(lab.name)]!;
    const b = doc.createElement('button');
    b.setAttribute('type', 'button');
    b.dataset['lab'] = lab.name;
    b.textContent = lab.name.slice(dir.length);
    b.title = lab.summary;
    b.addEventListener('click', () => {
      labName = lab.name;
      editor.value = lab.text;
      state = { script: lab.text, variant: undefined, seed: state.seed, lab: lab.name };
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
    // The lab the link names (a bundled one), else the lab whose text it is.
    labName = labs.find((l) => l.name === fromLink.lab)?.name ?? labs.find((l) => l.text === fromLink.script)?.name;
    run(false);
    return;
  }
  const first = labs[0];
  labName = first?.name;
  editor.value = first?.text ?? '';
  state = { script: editor.value, variant: undefined, ...(labName !== undefined ? { lab: labName } : {}) };
  run(false);
}

/** The editor's line numbers: the script lines that the transcript's gutter and the hover titles cite. */
function numberLines(): void {
  const n = editor.value.split('\n').length;
  if (gutter.dataset['lines'] !== String(n)) {
    gutter.textContent = Array.from({ length: n }, (_v, i) => String(i + 1)).join('\n');
    gutter.dataset['lines'] = String(n);
  }
  gutter.scrollTop = editor.scrollTop;
}
editor.addEventListener('scroll', () => {
  gutter.scrollTop = editor.scrollTop;
});
editor.addEventListener('input', numberLines);

// The seed: a rerun with it on every valid change; the link carries it (`&seed=N`, absent for 0).
seedField.addEventListener('input', () => {
  const seed = parseSeed(seedField.value);
  seedField.classList.toggle('invalid', seed === undefined);
  if (seed === undefined || seed === (state.seed ?? 0)) return;
  state = { ...state, seed };
  run(true);
});

/** The transcript lines here of `run` for `line` (or, for a watch event, `ref`): what a selection lights up. */
function transcriptLinesFor(runIndex: number, line: number, ref: string): El[] {
  const all = [...transcript.querySelectorAll(`.tl[data-run="${runIndex}"]`)];
  const byRef = ref !== '' ? all.filter((e) => e.getAttribute('data-ref') === ref) : [];
  return byRef.length > 0 ? byRef : all.filter((e) => e.getAttribute('data-line') === String(line));
}

/** Lights up (class `hl` on hover, `sel` on click) the lines of a selection here, the first scrolled into view. */
function lightTranscript(runIndex: number, line: number, ref: string, sticky: boolean): number {
  const cls = sticky ? 'sel' : 'hl';
  for (const e of transcript.querySelectorAll(`.${cls}`)) e.classList.remove(cls);
  const lit = line > 0 ? transcriptLinesFor(runIndex, line, ref) : [];
  for (const e of lit) e.classList.add(cls);
  const first = lit[0];
  if (first !== undefined && (first.offsetTop < transcript.scrollTop || first.offsetTop > transcript.scrollTop + transcript.clientHeight - 20)) {
    transcript.scrollTop = Math.max(0, first.offsetTop - transcript.clientHeight / 3);
  }
  doc.documentElement.dataset['litLines'] = String(lit.length);
  return lit.length;
}

/** A transcript line here hovered or clicked: its lines, and its marks in the frame. */
function fromTranscript(e: PageEvent, sticky: boolean): void {
  const el = e.target?.closest('.tl') ?? null;
  if (el === null) return;
  const runIndex = Number(el.getAttribute('data-run') ?? '-1');
  const line = Number(el.getAttribute('data-line') ?? '0');
  if (runIndex < 0 || line <= 0) return;
  const ref = el.getAttribute('data-ref') ?? '';
  lightTranscript(runIndex, line, ref, sticky);
  const marks = frame.contentWindow?.etcdsimSelect?.(runIndex, line, ref, sticky) ?? 0;
  doc.documentElement.dataset['litMarks'] = String(marks);
}
transcript.addEventListener('mouseover', (e) => fromTranscript(e, false));
transcript.addEventListener('click', (e) => fromTranscript(e, true));
transcript.addEventListener('mouseout', () => {
  for (const e of transcript.querySelectorAll('.hl')) e.classList.remove('hl');
  frame.contentWindow?.etcdsimSelect?.(0, 0, '', false);
});

editor.addEventListener('input', () => {
  if (pending !== undefined) g.clearTimeout(pending);
  pending = g.setTimeout(() => {
    pending = undefined;
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
  // A mark (or a line of the frame's own transcript) selected in the frame lights up its lines here.
  page.addEventListener('etcdsim-select', (e) => {
    if (e.detail !== undefined) lightTranscript(e.detail.run, e.detail.line, e.detail.ref, e.detail.sticky);
  });
});
// A link pasted into the address bar of an open playground.
g.addEventListener('hashchange', () => {
  const s = decodeFragment(g.location.hash);
  if (s !== undefined && (s.script !== editor.value || s.variant !== state.variant || (s.seed ?? 0) !== (state.seed ?? 0) || s.lab !== state.lab)) load();
});
drawLabs();
load();
