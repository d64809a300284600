// Which of the mutation baseline's CompileError mutants (docs/mutation/baseline.json, issue #35) are type errors
// today? StrykerJS's TypeScript checker decides it during a run, and a run whose checker went wrong (docs/mutation.md
// tells of one: the tree was rebased under it) can record mutants as compile errors that are none: they then sit
// in the table's "not measured" column, out of the score, unmeasured. This applies each such mutant to its file in memory and asks
// one TypeScript language service (tsconfig.mutation.json, as Stryker's checker) for the errors of that file and
// of the files importing it: a mutant that leaves both clean is no compile error, and is printed with the
// `--mutate` range that measures it (a block's range holds every mutant inside it). Reads only; a file whose
// source differs from the baseline's is skipped (run `node scripts/mutation-baseline.mjs --refresh` first).
//
//   node scripts/mutation-compile-check.mjs src/watch/watcher.ts src/lease/lessor.ts ...
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { mutantsOf } from './mutation-lib.mjs';

const root = resolve(import.meta.dirname, '..');
const baseline = JSON.parse(readFileSync(join(root, 'docs/mutation/baseline.json'), 'utf8'));
const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.mutation.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
if (config === undefined) throw new Error('tsconfig.mutation.json cannot be read');

// The mutated file's text lives here while it is checked; every other file is read from disk.
const mutated = new Map();
const versions = new Map();
const service = ts.createLanguageService(
  {
    getScriptFileNames: () => config.fileNames,
    getScriptVersion: (f) => String(versions.get(f) ?? 0),
    getScriptSnapshot: (f) => {
      const text = mutated.get(f) ?? ts.sys.readFile(f);
      return text === undefined ? undefined : ts.ScriptSnapshot.fromString(text);
    },
    getCurrentDirectory: () => root,
    getCompilationSettings: () => config.options,
    getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
    fileExists: ts.sys.fileExists,
    readFile: (f) => mutated.get(f) ?? ts.sys.readFile(f),
    readDirectory: ts.sys.readDirectory,
    directoryExists: ts.sys.directoryExists,
    getDirectories: ts.sys.getDirectories,
  },
  ts.createDocumentRegistry(),
);

/** The project's files whose imports resolve to `file` (a mutant can break a caller through an inferred type). */
function importersOf(file) {
  const program = service.getProgram();
  return program.getSourceFiles().filter(
    (sf) =>
      !sf.isDeclarationFile &&
      (sf.imports ?? []).some((imp) => resolve(ts.resolveModuleName(imp.text, sf.fileName, config.options, ts.sys).resolvedModule?.resolvedFileName ?? '') === file),
  ).map((sf) => sf.fileName);
}

/** Offset of a 1-based line and column. */
function offsetOf(text, line, column) {
  let at = 0;
  for (let l = 1; l < line; l++) at = text.indexOf('\n', at) + 1;
  return at + column - 1;
}

const identity = (m) => `${m.line}:${m.column}:${m.endLine}:${m.endColumn}:${m.mutator}:${m.replacement}`;
let version = 1;
for (const file of process.argv.slice(2)) {
  const abs = join(root, file);
  const source = readFileSync(abs, 'utf8');
  const measured = baseline.files[file];
  if (measured === undefined || measured.source !== source) {
    console.log(`${file}: not in the baseline as it is now; refresh first`);
    continue;
  }
  const current = new Set((await mutantsOf(file, source)).map(identity));
  const checked = [abs, ...importersOf(abs)];
  const recorded = measured.mutants.filter((m) => m.status === 'CompileError' && current.has(identity(m)));
  const none = [];
  for (const m of recorded) {
    mutated.set(abs, source.slice(0, offsetOf(source, m.line, m.column)) + m.replacement + source.slice(offsetOf(source, m.endLine, m.endColumn)));
    versions.set(abs, version++);
    const errors = checked.reduce((n, f) => n + service.getSyntacticDiagnostics(f).length + service.getSemanticDiagnostics(f).length, 0);
    if (errors === 0) none.push(m);
  }
  mutated.delete(abs);
  versions.set(abs, version++);
  console.log(`${file}: ${recorded.length} recorded as compile errors, ${recorded.length - none.length} are, ${none.length} are not`);
  for (const m of none) console.log(`  ${file}:${m.line}:${m.column - 1}-${m.endLine}:${m.endColumn - 1} ${m.mutator} ${JSON.stringify(m.replacement).slice(0, 60)}`);
}
