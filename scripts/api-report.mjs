// The package's public API, one report per entry point (etc/etcdsim.api.md for `etcdsim`,
// etc/etcdsim-grpc.api.md for `etcdsim/grpc`), written by API Extractor from the declarations of src/.
// `node scripts/api-report.mjs` (npm run api-report) rewrites the files; test/package/api_report.test.ts
// regenerates them in memory and fails when they differ from the checked-in ones, so every change of the
// public surface shows up in review.
//
// Declarations are emitted from src/ (only the files the entry points reach) into a cache folder rather than
// read from dist/, so a report never reflects a stale build. The emit uses tsconfig.build.json's options,
// so the declarations are the ones `npm run build` ships.
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import apiExtractor from '@microsoft/api-extractor';

const { CompilerState, Extractor, ExtractorConfig, ExtractorLogLevel, ExtractorMessageCategory } = apiExtractor;

const root = fileURLToPath(new URL('..', import.meta.url));

/** package.json export path → its source file and report name. */
export const ENTRY_POINTS = Object.freeze([
  { subpath: '.', source: 'src/index.ts', report: 'etcdsim' },
  { subpath: './grpc', source: 'src/grpc.ts', report: 'etcdsim-grpc' },
]);

/** Where the checked-in report of an entry point lives. */
export function reportPath(entry) {
  return join(root, 'etc', `${entry.report}.api.md`);
}

/** Emits the declarations the entries reach from `srcRoot` into `outDir` (as tsconfig.build.json would). */
function emitDeclarations(outDir, entries, srcRoot) {
  const configPath = join(root, 'tsconfig.build.json');
  const read = ts.readConfigFile(configPath, ts.sys.readFile);
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, root, undefined, configPath);
  const options = {
    ...parsed.options,
    outDir,
    rootDir: srcRoot,
    declaration: true,
    emitDeclarationOnly: true,
    sourceMap: false,
    declarationMap: false,
    noEmit: false,
  };
  const program = ts.createProgram(
    entries.map((e) => join(root, e.source)),
    options,
  );
  const result = program.emit();
  const errors = [...ts.getPreEmitDiagnostics(program), ...result.diagnostics].filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0 || result.emitSkipped) {
    const host = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' };
    throw new Error(`api-report: the entry points do not compile:\n${ts.formatDiagnostics(errors, host)}`);
  }
}

/** The declaration file an entry point's source (under `srcRoot`) compiles to, under `outDir`. */
function declarationOf(outDir, entry, srcRoot) {
  return join(outDir, relative(srcRoot, join(root, entry.source)).replace(/\.ts$/, '.d.ts'));
}

/**
 * Generates every entry point's report and returns them as `{ entry, path, text }` (nothing is written
 * under etc/). Throws with the compiler's or API Extractor's errors when a report cannot be made — an
 * exported symbol without a release tag (@public, @beta, @internal) among them. `entries` and `srcRoot` (the
 * folder their sources sit in, src/ by default) let a test run the same check on a fixture.
 */
export function generateApiReports({ entries = ENTRY_POINTS, srcRoot = join(root, 'src') } = {}) {
  // Not under node_modules (API Extractor takes whatever lies there for another package's), but with a link
  // to the repository's node_modules so the declarations' imports (etcd3, @grpc/grpc-js) resolve.
  const work = mkdtempSync(join(tmpdir(), 'etcdsim-api-'));
  try {
    symlinkSync(join(root, 'node_modules'), join(work, 'node_modules'), 'dir');
    const dts = join(work, 'dts');
    mkdirSync(join(work, 'report'));
    mkdirSync(join(work, 'temp'));
    emitDeclarations(dts, entries, srcRoot);
    const configs = entries.map((entry) =>
      ExtractorConfig.prepare({
        configObjectFullPath: join(root, 'scripts', 'api-extractor.json'),
        packageJsonFullPath: join(root, 'package.json'),
        configObject: {
          projectFolder: root,
          mainEntryPointFilePath: declarationOf(dts, entry, srcRoot),
          compiler: {
            overrideTsconfig: {
              compilerOptions: { target: 'es2022', lib: ['es2022'], module: 'nodenext', moduleResolution: 'nodenext', types: ['node'], skipLibCheck: true, strict: true },
              files: [declarationOf(dts, entry, srcRoot)],
            },
          },
          apiReport: {
            enabled: true,
            reportFileName: entry.report,
            reportFolder: join(work, 'report'),
            reportTempFolder: join(work, 'temp'),
            includeForgottenExports: false,
          },
          docModel: { enabled: false },
          dtsRollup: { enabled: false },
          tsdocMetadata: { enabled: false },
          newlineKind: 'lf',
          enumMemberOrder: 'by-name',
          messages: {
            compilerMessageReporting: { default: { logLevel: 'warning' } },
            // Names the public surface reaches but no entry point exports stay marked in the report, and
            // test/package/api_report.test.ts fails on one it does not list with its reason: export it
            // (tagged) or strip it from the published types with @internal (stripInternal).
            extractorMessageReporting: {
              default: { logLevel: 'warning' },
              'ae-forgotten-export': { logLevel: 'none', addToApiReportFile: true },
              // Every exported symbol says whether users may rely on it: a forgotten tag fails the report.
              'ae-missing-release-tag': { logLevel: 'error', addToApiReportFile: false },
              'ae-unresolved-link': { logLevel: 'none', addToApiReportFile: false },
              'ae-setter-with-docs': { logLevel: 'none', addToApiReportFile: false },
              'ae-undocumented': { logLevel: 'none', addToApiReportFile: false },
            },
            // Comments are plain prose, not TSDoc.
            tsdocMessageReporting: { default: { logLevel: 'none', addToApiReportFile: false } },
          },
        },
      }),
    );
    const compilerState = CompilerState.create(configs[0], { additionalEntryPoints: configs.slice(1).map((c) => c.mainEntryPointFilePath) });
    const reports = [];
    entries.forEach((entry, i) => {
      const problems = [];
      const result = Extractor.invoke(configs[i], {
        localBuild: true,
        compilerState,
        messageCallback: (message) => {
          // Console messages only narrate (report created, report changed); the rest are findings.
          const finding = message.category !== ExtractorMessageCategory.Console;
          if (finding && (message.logLevel === ExtractorLogLevel.Error || message.logLevel === ExtractorLogLevel.Warning)) problems.push(message.formatMessageWithLocation(root));
          message.handled = true;
        },
      });
      if (!result.succeeded || problems.length > 0) throw new Error(`api-report: API Extractor failed on ${entry.source}:\n${problems.join('\n')}`);
      // A warning not tied to one declaration names its file: name it as the built package does (dist/), and
      // without a line and column, so a comment added above the declaration does not change the report.
      const text = readFileSync(join(work, 'report', `${entry.report}.api.md`), 'utf8')
        .replaceAll(`${dts}/`, 'dist/')
        .replace(/^(\/\/ dist\/[^:\s]+):\d+:\d+ - /gm, '$1 - ');
      reports.push({ entry, path: reportPath(entry), text });
    });
    return reports;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * A unified diff (3 lines of context) from `before` to `after`, line by line; '' when they are equal.
 * Common head and tail are set aside first, so the longest-common-subsequence table covers only the
 * changed middle.
 */
export function lineDiff(before, after, beforeName = 'checked in', afterName = 'generated') {
  if (before === after) return '';
  const a = before.split('\n');
  const b = after.split('\n');
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const am = a.slice(head, a.length - tail);
  const bm = b.slice(head, b.length - tail);
  const w = bm.length + 1;
  const lcs = new Uint32Array((am.length + 1) * w);
  for (let i = am.length - 1; i >= 0; i--) {
    for (let j = bm.length - 1; j >= 0; j--) {
      lcs[i * w + j] = am[i] === bm[j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
    }
  }
  // Every line of both files as [op, text, line in a, line in b], op ' ' (both), '-' (a only), '+' (b only).
  const ops = [];
  for (let k = 0; k < head; k++) ops.push([' ', a[k], k, k]);
  let i = 0;
  let j = 0;
  while (i < am.length || j < bm.length) {
    if (i < am.length && j < bm.length && am[i] === bm[j]) ops.push([' ', am[i], head + i++, head + j++]);
    else if (i < am.length && (j === bm.length || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])) ops.push(['-', am[i], head + i++, head + j]);
    else ops.push(['+', bm[j], head + i, head + j++]);
  }
  for (let k = 0; k < tail; k++) ops.push([' ', a[a.length - tail + k], a.length - tail + k, b.length - tail + k]);
  const out = [`--- ${beforeName}`, `+++ ${afterName}`];
  const CONTEXT = 3;
  for (let k = 0; k < ops.length; ) {
    if (ops[k][0] === ' ') {
      k++;
      continue;
    }
    // One hunk: from CONTEXT lines before this change to CONTEXT lines after the last change within reach.
    const start = Math.max(0, k - CONTEXT);
    let last = k;
    for (let m = k + 1; m < ops.length && m - last <= 2 * CONTEXT; m++) if (ops[m][0] !== ' ') last = m;
    const end = Math.min(ops.length, last + 1 + CONTEXT);
    const hunk = ops.slice(start, end);
    const aLines = hunk.filter((o) => o[0] !== '+').length;
    const bLines = hunk.filter((o) => o[0] !== '-').length;
    out.push(`@@ -${hunk[0][2] + 1},${aLines} +${hunk[0][3] + 1},${bLines} @@`);
    for (const [op, line] of hunk) out.push(`${op}${line}`);
    k = end;
  }
  return out.join('\n');
}

/** Each entry point whose checked-in report differs from the generated one, with the diff. */
export function staleReports() {
  const stale = [];
  for (const { entry, path, text } of generateApiReports()) {
    const checkedIn = existsSync(path) ? readFileSync(path, 'utf8') : '';
    const rel = path.slice(root.length);
    if (checkedIn !== text) stale.push({ entry, path, diff: lineDiff(checkedIn, text, `${rel} (checked in)`, `${rel} (generated from src/)`) });
  }
  return stale;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (process.argv.includes('--check')) {
    const stale = staleReports();
    for (const s of stale) console.log(s.diff);
    if (stale.length > 0) {
      console.log(`\nThe public API differs from ${stale.map((s) => s.path.slice(root.length)).join(', ')}: run npm run api-report and commit the change.`);
      process.exitCode = 1;
    } else console.log('API reports are up to date.');
  } else {
    for (const { path, text } of generateApiReports()) {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, text);
      console.log(`wrote ${path.slice(root.length)}`);
    }
  }
}
