/**
 * Benchmark runner: `npm run bench [-- --quick] [-- --only mvcc[,other]] [-- --json]`.
 *
 * Each area has a file bench/<area>.bench.ts exporting a BenchSection; register it in SECTIONS below.
 * Every row compares a subject with a baseline measured in the same run (see harness.ts) and may carry a
 * target ratio and etcd's own figure for orientation.
 *
 * Output: a table on stdout; with --json, exactly one JSON object on stdout instead (progress always goes
 * to stderr). The exit code is 0 even when a target is missed: benchmarks report, tests judge.
 */
import { cpus, loadavg } from 'node:os';
import { attacksSection } from './attacks.bench.js';
import { clusterSection } from './cluster.bench.js';
import { deliverySection } from './delivery.bench.js';
import { etcd3Section } from './etcd3.bench.js';
import { floorSection } from './floor.bench.js';
import { formatFigure, gcAvailable, spread, targetMet, type BenchContext, type BenchSection, type Row, type Sample } from './harness.js';
import { leaseSection } from './lease.bench.js';
import { lifecycleSection } from './lifecycle.bench.js';
import { mvccSection } from './mvcc.bench.js';
import { processesSection } from './processes.bench.js';
import { serverSection } from './server.bench.js';
import { servedSection } from './served.bench.js';
import { shadowSection } from './shadow.bench.js';
import { snapshotSection } from './snapshot.bench.js';
import { upkeepSection } from './upkeep.bench.js';
import { watchSection } from './watch.bench.js';

/** Every section, in the order they run. Add new areas (watch, lease, etcd3 adapter) here. */
const SECTIONS: readonly BenchSection[] = [mvccSection, upkeepSection, watchSection, leaseSection, etcd3Section, floorSection, lifecycleSection, serverSection, servedSection, shadowSection, deliverySection, snapshotSection, clusterSection, processesSection, attacksSection];

interface Args {
  readonly quick: boolean;
  readonly json: boolean;
  readonly only: readonly string[] | undefined;
}

function usage(): string {
  return `usage: npm run bench -- [--quick] [--json] [--only <section>[,<section>...]]\nsections: ${SECTIONS.map((s) => s.name).join(', ')}`;
}

function parseArgs(argv: readonly string[]): Args {
  let quick = false;
  let json = false;
  let only: string[] | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') quick = true;
    else if (a === '--json') json = true;
    else if (a === '--only' || a.startsWith('--only=')) {
      const v = a === '--only' ? argv[++i] : a.slice('--only='.length);
      if (v === undefined || v === '') throw new UsageError('--only needs a section name');
      only = [...(only ?? []), ...v.split(',').filter((x) => x !== '')];
    } else if (a === '--help' || a === '-h') throw new UsageError('');
    else throw new UsageError(`unknown argument ${JSON.stringify(a)}`);
  }
  if (only !== undefined) {
    const known = new Set(SECTIONS.map((s) => s.name));
    const unknown = only.filter((n) => !known.has(n));
    if (unknown.length > 0) throw new UsageError(`unknown section(s): ${unknown.join(', ')}`);
  }
  return { quick, json, only };
}

class UsageError extends Error {}

interface SectionResult {
  readonly section: BenchSection;
  readonly rows: readonly Row[];
  readonly seconds: number;
  /** The 1-minute load average when the section started and when it ended: on a shared machine, what the figures ran beside. */
  readonly load: readonly [number, number];
}

function ratioText(r: Row): string {
  return `${r.ratio.toFixed(2)}×`;
}

/** ± of a side; '—' when a round had no finite figure (e.g. a side that stalled or failed). */
function spreadText(s: Sample): string {
  const x = spread(s);
  return Number.isFinite(x) ? `${(x * 100).toFixed(0)}%` : '—';
}

function targetText(r: Row): string {
  const met = targetMet(r);
  if (r.target === undefined || met === undefined) return '—';
  return `≤ ${r.target.maxRatio}× ${met ? 'ok' : 'MISSED'}`;
}

function pad(s: string, w: number, right = false): string {
  const len = [...s].length;
  if (len >= w) return s;
  return right ? ' '.repeat(w - len) + s : s + ' '.repeat(w - len);
}

function printTable(results: readonly SectionResult[], args: Args, totalSeconds: number): void {
  const out: string[] = [];
  out.push(`etcdsim benchmarks — node ${process.version}, ${args.quick ? 'quick' : 'full'} run, gc between rounds: ${gcAvailable ? 'yes' : 'no'}`);
  out.push('ratio = subject ns/op ÷ baseline ns/op (rows in bytes: subject size ÷ baseline size), both medians of rounds taken in this run; ± = (max-min)/median over rounds');
  for (const res of results) {
    out.push('');
    out.push(`== ${res.section.name}: ${res.section.title} (${res.seconds.toFixed(1)} s; load average ${res.load[0].toFixed(1)} → ${res.load[1].toFixed(1)} on ${cpus().length} cores)`);
    const header = ['row', 'subject /op', '±', 'baseline', 'baseline /op', '±', 'ratio', 'target', 'etcd reference'];
    const lines = res.rows.map((r) => [
      r.name,
      formatFigure(r, r.subject.nsPerOp, true),
      spreadText(r.subject),
      r.baselineName,
      formatFigure(r, r.baseline.nsPerOp, false),
      spreadText(r.baseline),
      ratioText(r),
      targetText(r),
      r.reference === undefined ? '—' : `${r.reference.label} (${(r.reference.nsPerOp / r.subject.nsPerOp).toFixed(1)}× ours)`,
    ]);
    const rightAligned = new Set([1, 2, 4, 5, 6]);
    const widths = header.map((h, c) => Math.max([...h].length, ...lines.map((l) => [...l[c]!].length)));
    const fmt = (cells: readonly string[]): string => cells.map((cell, c) => pad(cell, widths[c]!, rightAligned.has(c))).join('  ').trimEnd();
    out.push(fmt(header));
    out.push(widths.map((w) => '-'.repeat(w)).join('  '));
    for (const l of lines) out.push(fmt(l));
    const notes = res.rows.filter((r) => r.note !== undefined);
    if (notes.length > 0) {
      out.push('notes:');
      for (const r of notes) out.push(`  ${r.name}: ${r.note}`);
    }
  }
  out.push('');
  const missed = results.flatMap((r) => r.rows).filter((r) => targetMet(r) === false);
  out.push(`total ${totalSeconds.toFixed(1)} s; ${missed.length === 0 ? 'all targets met' : `targets missed: ${missed.map((r) => r.name).join('; ')}`}`);
  process.stdout.write(out.join('\n') + '\n');
}

function jsonReport(results: readonly SectionResult[], args: Args, totalSeconds: number): unknown {
  return {
    node: process.version,
    quick: args.quick,
    gcBetweenRounds: gcAvailable,
    totalSeconds,
    sections: results.map((res) => ({
      name: res.section.name,
      title: res.section.title,
      seconds: res.seconds,
      loadAverage: res.load,
      rows: res.rows.map((r) => ({
        name: r.name,
        unit: r.unit,
        // 'bytes': the *NsPerOp fields below hold sizes in bytes (e.g. peak RSS), not times
        measure: r.measure ?? 'time',
        subjectNsPerOp: r.subject.nsPerOp,
        subjectRoundsNsPerOp: r.subject.rounds,
        subjectOpsPerRound: r.subject.ops,
        baselineName: r.baselineName,
        baselineNsPerOp: r.baseline.nsPerOp,
        baselineRoundsNsPerOp: r.baseline.rounds,
        baselineOpsPerRound: r.baseline.ops,
        ratio: r.ratio,
        targetMaxRatio: r.target?.maxRatio ?? null,
        targetMet: targetMet(r) ?? null,
        reference: r.reference ?? null,
        note: r.note ?? null,
      })),
    })),
  };
}

async function main(): Promise<void> {
  let args: Args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    if (e.message !== '') process.stderr.write(`bench: ${e.message}\n`);
    process.stderr.write(usage() + '\n');
    process.exitCode = e.message === '' ? 0 : 2;
    return;
  }
  const t0 = process.hrtime.bigint();
  const ctx: BenchContext = {
    quick: args.quick,
    log: (m) => process.stderr.write(`[bench +${(Number(process.hrtime.bigint() - t0) / 1e9).toFixed(1)}s] ${m}\n`),
  };
  const chosen = SECTIONS.filter((s) => args.only === undefined || args.only.includes(s.name));
  const results: SectionResult[] = [];
  for (const section of chosen) {
    const s0 = process.hrtime.bigint();
    const load0 = loadavg()[0]!;
    const rows = await section.run(ctx);
    results.push({ section, rows, seconds: Number(process.hrtime.bigint() - s0) / 1e9, load: [load0, loadavg()[0]!] });
  }
  const totalSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
  if (args.json) process.stdout.write(JSON.stringify(jsonReport(results, args, totalSeconds)) + '\n');
  else printTable(results, args, totalSeconds);
}

await main();
