/**
 * The self-contained HTML page of a scenario: its description and predict-first question, per run the numbered
 * steps beside the picture, the answer, and the transcript linked to the picture line by line.
 */
import { draw } from './draw.js';
import { CLUSTER_LEGEND, LEGEND, RESTART_LEGEND } from './legend.js';
import { esc, label, prose, showMs } from './look.js';
import { descriptionParagraphs, PREDICT, timelineSteps, type TimelineModel } from './model.js';
/** The description as the page shows it: the title line, the question to predict, and labelled paragraphs. */
function descriptionHtml(paragraphs: readonly string[]): { lead: string; body: string; predict: string | undefined } {
  const [first, ...rest] = paragraphs;
  let predict: string | undefined;
  const body: string[] = [];
  for (const p of rest) {
    if (PREDICT.test(p)) {
      predict = p.replace(PREDICT, '');
      continue;
    }
    // A paragraph that opens with a short label ("What goes wrong.") gets it as a heading.
    const m = /^([A-Z][^.]{2,60})\.\s+(.*)$/.exec(p);
    if (m !== null && /^(What goes wrong|What the fix changes|How it was found|The fix|Where|Why)/.test(m[1]!)) {
      body.push(`<h3>${prose(m[1]!)}</h3><p>${prose(m[2]!)}</p>`);
    } else body.push(`<p>${prose(p)}</p>`);
  }
  return { lead: first !== undefined ? `<p class="lead">${prose(first)}</p>` : '', body: body.join('\n'), predict };
}

/**
 * What a transcript line is about, when it is about one named watch: `watch W@5` for `[watch W @5] ...`,
 * `progress W@7` for `[watch W] progress notify: 7`, `open W` for the line that opens or resumes it,
 * `cancel W` for the lines of its cancelation by the server. The timeline's marks carry the same
 * reference, so a line and its mark find each other more precisely than by their script line.
 */
export function transcriptRef(text: string): string | undefined {
  const ev = /^\[watch (\S+) @(\d+)\] /.exec(text);
  if (ev !== null) return `watch ${ev[1]!}@${ev[2]!}`;
  const pr = /^\[watch (\S+)\] progress notify: (\d+)$/.exec(text);
  if (pr !== null) return `progress ${pr[1]!}@${pr[2]!}`;
  const cancel = /^\[watch (\S+)\] (?:watch was canceled|Error: watch is canceled)|^# watch (\S+): canceled/.exec(text);
  if (cancel !== null) return `cancel ${(cancel[1] ?? cancel[2])!}`;
  const open = /^(?:\$ etcdctl watch .*|\S+> watch .*)   # (?:watch (\S+)(?:,| on session)|(\S+) resumed,)/.exec(text);
  if (open !== null) return `open ${(open[1] ?? open[2])!}`;
  return undefined;
}

/**
 * A transcript as HTML: one span per line (its text unchanged, lines joined by newlines, so the text reads as
 * before), carrying the script line that printed it (`data-line`) and what it is about (`data-ref`); the first
 * line of each step shows that script line in the gutter (`data-n`, drawn by CSS, so it is not part of the
 * text). `runOf`, when given, is each line's run (the playground's whole transcript, every variant in one):
 * it goes in `data-run`.
 */
export function transcriptHtml(lines: readonly string[], lineOf: readonly number[], runOf?: readonly number[]): string {
  let prev = '';
  return lines
    .map((t, i) => {
      const n = lineOf.length === lines.length ? lineOf[i]! : 0;
      const run = runOf !== undefined && runOf.length === lines.length ? runOf[i]! : undefined;
      const ref = transcriptRef(t);
      const at = `${run ?? ''}:${n}`;
      const gutter = n > 0 && at !== prev ? ` data-n="${n}"` : '';
      prev = at;
      return `<span class="tl"${run !== undefined ? ` data-run="${run}"` : ''} data-line="${n}"${ref !== undefined ? ` data-ref="${esc(ref)}"` : ''}${gutter}>${label(t)}</span>`;
    })
    .join('\n');
}

/**
 * The page's link between transcript and picture (plain JavaScript, inlined): hovering or clicking a transcript
 * line, a step or a mark lights up the others of the same script line (or of the same watch event), and
 * scrolls the transcript box and the drawing to them. `etcdsimSelect(run, line, ref, sticky)` does the same
 * from outside (the playground's own transcript), and every selection made here is announced to the embedding
 * page as an `etcdsim-select` event on the document.
 */
const LINK_SCRIPT = `
(function () {
  var doc = document;
  function sections() { return doc.querySelectorAll('section.run'); }
  function clear(cls) { doc.querySelectorAll('.' + cls).forEach(function (e) { e.classList.remove(cls); }); }
  function is(attr, v) { return '[' + attr + '="' + CSS.escape(v) + '"]'; }
  function marks(sec, line, ref) {
    var byRef = ref ? sec.querySelectorAll('svg.timeline ' + is('data-ref', ref)) : [];
    return byRef.length > 0 ? byRef : sec.querySelectorAll('svg.timeline ' + is('data-line', line) + ', ol.steps li' + is('data-line', line));
  }
  function lines(sec, line, ref) {
    var byRef = ref ? sec.querySelectorAll('pre.transcript .tl' + is('data-ref', ref)) : [];
    return byRef.length > 0 ? byRef : sec.querySelectorAll('pre.transcript .tl' + is('data-line', line));
  }
  function reveal(ms, ls) {
    var l = ls[0];
    if (l) {
      var pre = l.closest('pre');
      var top = l.offsetTop - pre.clientHeight / 3;
      if (l.offsetTop < pre.scrollTop || l.offsetTop > pre.scrollTop + pre.clientHeight - 20) pre.scrollTop = Math.max(0, top);
    }
    var m = Array.prototype.find.call(ms, function (e) { return e.closest('.scroll'); });
    if (m) {
      var box = m.closest('.scroll');
      var br = box.getBoundingClientRect(), mr = m.getBoundingClientRect();
      if (mr.left < br.left + 200 || mr.right > br.right) box.scrollLeft += mr.left - br.left - br.width / 2;
    }
  }
  function show(sec, line, ref, cls) {
    clear(cls);
    var ms = marks(sec, line, ref), ls = lines(sec, line, ref);
    ms.forEach(function (e) { e.classList.add(cls); });
    ls.forEach(function (e) { e.classList.add(cls); });
    if (cls === 'sel' && ls.length > 0) { var d = ls[0].closest('details'); if (d) d.open = true; }
    reveal(ms, ls);
    var dd = doc.documentElement.dataset;
    dd.litMarks = String(sec.querySelectorAll('svg.timeline .' + cls).length);
    dd.litLines = String(sec.querySelectorAll('pre.transcript .' + cls).length);
    return ms.length;
  }
  window.etcdsimSelect = function (run, line, ref, sticky) {
    var sec = sections()[run];
    if (!sec || !line) { clear(sticky ? 'sel' : 'hl'); return 0; }
    return show(sec, String(line), ref || '', sticky ? 'sel' : 'hl');
  };
  function origin(t) { return t && t.closest ? t.closest('svg.timeline [data-line], pre.transcript .tl, ol.steps li') : null; }
  function handle(e, cls) {
    var el = origin(e.target);
    if (!el) return;
    var line = el.getAttribute('data-line');
    if (!line || line === '0') return;
    var sec = el.closest('section.run');
    var ref = el.getAttribute('data-ref') || '';
    show(sec, line, ref, cls);
    doc.dispatchEvent(new CustomEvent('etcdsim-select', { detail: { run: Array.prototype.indexOf.call(sections(), sec), line: Number(line), ref: ref, sticky: cls === 'sel' } }));
  }
  doc.addEventListener('mouseover', function (e) { handle(e, 'hl'); });
  doc.addEventListener('mouseout', function (e) { if (origin(e.target)) clear('hl'); });
  doc.addEventListener('click', function (e) { handle(e, 'sel'); });
})();
`;

/** A self-contained page: what the scenario is about, then per run its steps beside its picture, its answer, its transcript. */
export function renderHtml(title: string, runs: readonly { model: TimelineModel; transcript: readonly string[] }[]): string {
  const first = runs[0]?.model;
  const cluster = runs.some((r) => r.model.members.length > 0);
  const restarts = runs.some((r) => r.model.restores.some((x) => x.kind === 'restart' || x.kind === 'crash-during-compact'));
  const desc = descriptionHtml(descriptionParagraphs(first?.description ?? []));
  const body: string[] = [];
  for (const r of runs) {
    const m = r.model;
    const { steps, answer } = timelineSteps(m);
    const d = draw(m);
    body.push(`<section class="run"${m.variant !== undefined ? ` data-variant="${esc(m.variant)}"` : ''}>`);
    body.push(`<h2>${m.variant !== undefined ? `variant ${esc(m.variant)}` : 'the run'}${m.settings.length > 0 ? ` <small>(${esc(m.settings.join(', '))})</small>` : ''}</h2>`);
    if (m.failure !== undefined) body.push(`<p class="failure">${label(m.failure)}</p>`);
    body.push('<div class="run-body">');
    body.push(
      `<ol class="steps">${steps.map((st) => `<li value="${st.n}" data-step="${st.n}" data-line="${st.line}" data-rev="${st.rev}">${prose(st.text)} <span class="at">line ${st.line}, revision ${st.rev}${m.endMs > 0 && st.atMs !== undefined ? `, t=${showMs(st.atMs)}` : ''}</span></li>`).join('')}</ol>`,
    );
    body.push(`<div class="figure"><div class="scroll">${d.svg}</div></div>`);
    body.push('</div>');
    if (answer !== undefined) body.push(`<details class="answer"><summary>Answer (predict first, then open)</summary><p>${prose(answer)}</p></details>`);
    body.push(
      `<details class="transcript" open><summary>transcript <small>(the numbers at the left are script lines, as the picture's hover titles cite them; hover or click a line or a mark to see the other)</small></summary><pre class="transcript">${transcriptHtml(r.transcript, m.transcriptLines)}</pre></details>`,
    );
    body.push('</section>');
  }
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; overflow-wrap: anywhere; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.5em; } h3 { font-size: 1em; margin: 1em 0 0.3em; }
p.lead { font-size: 1.05em; font-weight: bold; }
.predict { border-left: 4px solid #2ca02c; background: #f3faf3; padding: 0.5em 0.8em; }
.failure { color: #b00; font-weight: bold; }
ul.legend { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 0.3em 1.2em; font-size: 12px; }
ul.legend li { display: flex; align-items: center; gap: 0.3em; }
/* The steps beside the picture only where the picture still gets the width it is drawn for; above it otherwise. */
.run-body { display: grid; grid-template-columns: minmax(14em, 22em) minmax(0, 1fr); gap: 1em; align-items: start; }
@media (max-width: 1600px) { .run-body { grid-template-columns: minmax(0, 1fr); } }
/* A narrow window gives the picture its margins: the less it is scaled down, the larger its labels. */
@media (max-width: 1000px) { body { margin: 1em 0.5em; } }
ol.steps { margin: 0; padding-left: 1.8em; font-size: 14px; }
ol.steps li { margin-bottom: 0.5em; }
ol.steps .at { color: #888; font-size: 11px; white-space: nowrap; }
.figure { min-width: 0; }
/* The whole drawing in its box, scaled down when the box is narrower: nothing of it waits behind a scroll. */
.scroll { border: 1px solid #ddd; background: #fff; }
.scroll svg.timeline { display: block; max-width: 100%; height: auto; }
pre.transcript { background: #f7f7f7; padding: 0.8em 0.8em 0.8em 3.6em; font-size: 12px; overflow: auto; max-width: 100%; max-height: 32em; position: relative; }
pre.transcript .tl[data-n]::before { content: attr(data-n); position: absolute; left: 0.4em; width: 2.6em; text-align: right; color: #999; }
pre.transcript .tl[data-line]:not([data-line="0"]) { cursor: pointer; }
pre.transcript .tl.hl { background: #fff1b8; } pre.transcript .tl.sel { background: #ffd666; }
svg.timeline [data-line]:not([data-line="0"]) { cursor: pointer; }
svg.timeline .hl:not(text), svg.timeline .hl > :not(text) { stroke: #f0a000; stroke-width: 3px; }
svg.timeline .sel:not(text), svg.timeline .sel > :not(text) { stroke: #d46b08; stroke-width: 3.5px; }
svg.timeline .hl text, svg.timeline .sel text { stroke: none; }
ol.steps li.hl { background: #fff1b8; } ol.steps li.sel { background: #ffd666; }
details.answer { border-left: 4px solid #1f77b4; padding: 0.3em 0.8em; margin: 0.8em 0; }
code { background: #f2f2f2; padding: 0 0.2em; }
</style>
<script>
// Not needed to draw the page: it only records, for checks in a headless browser, that the page was laid out
// (data-rendered, data-writes, data-svg-width, data-overflow-x, data-steps, data-legend, data-scroll-overflow)
// and whether any script error happened (data-errors).
window.addEventListener('error', function () { var d = document.documentElement.dataset; d.errors = String(Number(d.errors || 0) + 1); });
window.addEventListener('load', function () {
  var d = document.documentElement.dataset;
  var svg = document.querySelector('svg.timeline');
  var scroll = document.querySelector('.scroll');
  d.writes = String(document.querySelectorAll('svg.timeline .write').length);
  d.svgWidth = String(svg ? Math.round(svg.getBoundingClientRect().width) : 0);
  d.viewport = String(document.documentElement.clientWidth);
  d.overflowX = String(document.documentElement.scrollWidth - document.documentElement.clientWidth);
  d.scrollOverflow = String(scroll ? scroll.scrollWidth - scroll.clientWidth : 0);
  d.steps = String(document.querySelectorAll('ol.steps li').length);
  d.legend = String(document.querySelectorAll('ul.legend li').length);
  d.rendered = 'yes';
});
${LINK_SCRIPT}
</script>
</head>
<body>
<h1>${esc(title)}</h1>
${desc.lead}
${desc.predict !== undefined ? `<div class="predict"><strong>Predict first:</strong> ${prose(desc.predict)}</div>` : ''}
<div class="description">${desc.body}</div>
<p>Revisions run left to right; long uneventful spans are elided behind a break mark. Each key has a lane; reads, each
watcher and each lease have one below. Under them, the time strip places what happens on etcd's own clock by virtual
time: watch opens and cancels, lease grants, keep-alives and expiry checks, compactions. The numbered steps beside the
picture are the script's notes, marked on the axis where they happen. Hover a mark for details; hover or click a mark or
a transcript line and the other lights up.${
    cluster
      ? ` On a cluster the time strip has a row per member: who leads (and from which term), who is stopped, down,
cut off or slow, each lever the script pulls and each of Raft's answers (an election, a step-down, a snapshot sent),
at its moment; a watch's lane names the member that serves it (@infra3).`
      : ''
  }${restarts ? ' A member killed and restarted is marked where it rebuilt its index from its backend, on both axes.' : ''}</p>
<ul class="legend">
${LEGEND}${cluster ? `\n${CLUSTER_LEGEND}` : ''}${restarts ? `\n${RESTART_LEGEND}` : ''}
</ul>
${body.join('\n')}
</body>
</html>
`;
}
