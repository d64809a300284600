/**
 * What a learner must be able to read on a lab page without scrolling the drawing or hovering, checked inside
 * the page (an expression for Runtime.evaluate that returns the problems found, as lines):
 *  - the drawing fits its box: nothing of it is hidden behind a sideways scroll;
 *  - no text of the drawing is cut by the drawing's edge;
 *  - no text of the drawing overlaps another text, no break mark or numbered step circle covers a text, and no
 *    step circle another (each step readable);
 *  - every read is labelled on the page with what it returned (its keys, `no keys`, or its error).
 */
export const LAYOUT_CHECK = String.raw`(() => {
  const problems = [];
  const rect = (r) => ({ l: r.left, t: r.top, r: r.right, b: r.bottom });
  const overlap = (a, b) => Math.min(a.r, b.r) - Math.max(a.l, b.l) > 1.5 && Math.min(a.b, b.b) - Math.max(a.t, b.t) > 1.5;
  const name = (e) => (e.textContent || e.getAttribute('class') || e.tagName).trim().slice(0, 60);
  for (const [i, box] of [...document.querySelectorAll('.scroll')].entries()) {
    if (box.scrollWidth > box.clientWidth + 1) problems.push('drawing ' + i + ' is wider than its box: ' + box.scrollWidth + ' > ' + box.clientWidth + ' px');
    const svg = box.querySelector('svg.timeline');
    if (!svg) continue;
    const edge = rect(svg.getBoundingClientRect());
    const texts = [...svg.querySelectorAll('text')].filter((t) => t.textContent.trim() !== '' && t.getClientRects().length > 0);
    const boxes = texts.map((t) => rect(t.getBoundingClientRect()));
    texts.forEach((t, k) => {
      const b = boxes[k];
      if (b.l < edge.l - 0.5 || b.r > edge.r + 0.5 || b.t < edge.t - 0.5 || b.b > edge.b + 0.5) problems.push('cut by the edge of drawing ' + i + ': "' + name(t) + '"');
    });
    for (let a = 0; a < texts.length; a++) {
      for (let c = a + 1; c < texts.length; c++) {
        if (overlap(boxes[a], boxes[c])) problems.push('text over text in drawing ' + i + ': "' + name(texts[a]) + '" and "' + name(texts[c]) + '"');
      }
    }
    // The break mark of an elided span (its zigzag) and the step circles cover no text.
    const glyphs = [...svg.querySelectorAll('.axis-break path:first-of-type, .step-marker circle, .time-step circle')];
    for (const gl of glyphs) {
      const b = rect(gl.getBoundingClientRect());
      texts.forEach((t, k) => {
        if (gl.parentNode.contains(t)) return;
        if (overlap(b, boxes[k])) problems.push('a mark over text in drawing ' + i + ': ' + (gl.parentNode.getAttribute('class') || '') + ' over "' + name(t) + '"');
      });
    }
    const circles = [...svg.querySelectorAll('.step-marker circle, .time-step circle')].map((c) => ({ c, b: rect(c.getBoundingClientRect()) }));
    for (let a = 0; a < circles.length; a++) {
      for (let c = a + 1; c < circles.length; c++) {
        if (overlap(circles[a].b, circles[c].b)) problems.push('step over step in drawing ' + i + ': ' + circles[a].c.parentNode.dataset.step + ' and ' + circles[c].c.parentNode.dataset.step);
      }
    }
    for (const r of svg.querySelectorAll('.read')) {
      const label = svg.querySelector('.read-label[data-read="' + r.dataset.read + '"]');
      if (!label || label.textContent.trim() === '') problems.push('read at line ' + r.dataset.line + ' has no label on the page');
    }
  }
  return problems;
})()`;
