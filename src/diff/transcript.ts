/** A divergent run as text: each op, both sides' answers and stream responses, the divergence marked. */
import type { Divergence, TranscriptStep } from './engine.js';
import type { Op } from './ops.js';

const MAX_LINE = 600;

function clip(s: string): string {
  return s.length > MAX_LINE ? `${s.slice(0, MAX_LINE)}… (${s.length} chars)` : s;
}

/** An op in one line (JSON; generated values shown by size). */
export function opText(op: Op): string {
  return clip(JSON.stringify(op));
}

export function formatTranscript(steps: readonly TranscriptStep[], divergence: Divergence | undefined): string {
  const lines: string[] = [];
  for (const s of steps) {
    const mark = divergence !== undefined && divergence.step === s.index ? '!!' : '  ';
    lines.push(`${mark} #${s.index + 1} ${s.sim === '(end of run)' ? '(end of run)' : opText(s.op)}`);
    if (s.sim === s.etcd) lines.push(`      both:    ${clip(s.sim)}`);
    else {
      lines.push(`      etcdsim: ${clip(s.sim)}`);
      lines.push(`      etcd:    ${clip(s.etcd)}`);
    }
    for (const st of s.streams) {
      const same = st.sim.length === st.etcd.length && st.sim.every((x, i) => x === st.etcd[i]);
      if (same) for (const r of st.sim) lines.push(`      ${st.stream} both:    ${clip(r)}`);
      else {
        for (const r of st.sim) lines.push(`      ${st.stream} etcdsim: ${clip(r)}`);
        for (const r of st.etcd) lines.push(`      ${st.stream} etcd:    ${clip(r)}`);
      }
    }
  }
  if (divergence !== undefined) {
    lines.push('', `Divergence at op #${divergence.step + 1} in ${divergence.where}:`);
    lines.push(`  etcdsim: ${clip(divergence.sim)}`);
    lines.push(`  etcd:    ${clip(divergence.etcd)}`);
  }
  return lines.join('\n');
}
