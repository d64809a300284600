// Types of mutation-lib.mjs (the mutation baseline's counting and line carrying, issue #35), so the CI
// test (test/properties/mutation.test.ts) uses it under strict TypeScript.

/** A mutant as the baseline keeps it (Stryker's JSON report: 1-based lines and columns). */
export interface MeasuredMutant {
  readonly line: number;
  readonly column: number;
  readonly endLine: number;
  readonly endColumn?: number;
  readonly mutator: string;
  readonly replacement: string;
  readonly status: string;
}

/** A mutant Stryker would make of a source now, not yet run. */
export interface SourceMutant {
  readonly line: number;
  readonly column: number;
  readonly endLine: number;
  readonly endColumn: number;
  readonly mutator: string;
  readonly replacement: string;
  readonly ignored: boolean;
}

/** A measured file: its source as measured, the property files that reached it, its mutants. */
export interface MeasuredFile {
  readonly source: string;
  readonly coveredBy: readonly string[];
  readonly mutants: readonly MeasuredMutant[];
}

/** docs/mutation/why.json: reasons by `file:line:mutator` or `file:mutator`. */
export type Why = Readonly<Record<string, string>>;

export function score(mutants: readonly Pick<MeasuredMutant, 'status'>[]): { detected: number; valid: number };
export function reasonOf(why: Why, file: string, m: Pick<MeasuredMutant, 'line' | 'mutator'>): string | undefined;
export function isEquivalent(why: Why, file: string, m: Pick<MeasuredMutant, 'line' | 'mutator'>): boolean;
export function scoreWithoutEquivalents(
  file: string,
  mutants: readonly Pick<MeasuredMutant, 'line' | 'mutator' | 'status'>[],
  why: Why,
): { detected: number; valid: number; equivalent: number; pct: number | undefined; pctWithoutEquivalents: number | undefined };
export function lineMap(before: string, after: string): (number | undefined)[];
export function mutantsOf(file: string, source: string): Promise<SourceMutant[]>;
export function carryOver(
  measured: Pick<MeasuredFile, 'source' | 'mutants'>,
  source: string,
  current: readonly SourceMutant[],
): { map: (number | undefined)[]; mutants: MeasuredMutant[]; changed: SourceMutant[]; lost: MeasuredMutant[] };
export function mergeRun(before: readonly MeasuredMutant[], run: readonly MeasuredMutant[]): MeasuredMutant[];
export const PENDING: 'Pending';
