/**
 * etcdctl's interactive txn (`etcdctl txn` reading its input): compares such as `value("k") = "v"`,
 * `mod("k") > "3"`, `create("k") = "0"`, `version("k") < "2"`, `lease("k") = "694d..."` (and etcdctl's
 * short names val, m, c, ver), a blank line, the success ops, a blank line, the failure ops. In a script
 * the block follows a `txn` line and closes with `end`.
 */
import { parseKvCommand, type TxnCmd, type TxnCompare, type TxnOp } from './commands.js';
import { plain, splitWords, type Word } from './lexer.js';
import { ScenarioSyntaxError } from './syntax_error.js';

const COMPARE_RE = /^\s*(value|mod|create|version|lease|val|c|m|ver)\(\s*("(?:[^"\\]|\\.)*"|'[^']*'|\$\{\w+\}|[^\s)]+)\s*\)\s*(!=|=(?!=)|>|<)\s*(.+?)\s*$/;
const TARGETS: Readonly<Record<string, TxnCompare['target']>> = {
  value: 'VALUE',
  val: 'VALUE',
  mod: 'MOD',
  m: 'MOD',
  create: 'CREATE',
  c: 'CREATE',
  version: 'VERSION',
  ver: 'VERSION',
  lease: 'LEASE',
};

/** One compare line of the block. */
function parseCompare(text: string, lineNo: number): TxnCompare {
  const m = COMPARE_RE.exec(text);
  if (m === null) {
    throw new ScenarioSyntaxError(lineNo, `expected a txn compare like value("k") = "v", mod("k") > "3", create("k") = "0", version("k") < "2" or lease("k") = "694d..."; got ${text.trim()}`);
  }
  const keyWords = splitWords(m[2]!, lineNo);
  const valueWords = splitWords(m[4]!, lineNo);
  if (keyWords.length !== 1 || valueWords.length !== 1) throw new ScenarioSyntaxError(lineNo, `a txn compare takes one key and one quoted value; got ${text.trim()}`);
  return { target: TARGETS[m[1]!]!, key: keyWords[0]!, op: m[3] as TxnCompare['op'], operand: valueWords[0]!, raw: text.trim() };
}

/**
 * The `txn` line at `lines[at]` (line number `lineNo`, arguments `args`) and its block up to `end`:
 * the command, and the index of the `end` line, where the script's reading resumes.
 */
export function parseTxnBlock(lines: readonly string[], at: number, args: readonly Word[], lineNo: number): { command: TxnCmd; end: number } {
  if (args.length !== 0) throw new ScenarioSyntaxError(lineNo, 'txn takes no arguments: write compares, a blank line, success ops, a blank line, failure ops, then end');
  const compares: TxnCompare[] = [];
  const success: TxnOp[] = [];
  const failure: TxnOp[] = [];
  const body: { text: string; words: Word[] }[] = [];
  let section = 0;
  let idx = at + 1;
  for (; idx < lines.length; idx++) {
    const bl = lines[idx]!;
    const bt = bl.trim();
    const bNo = idx + 1;
    if (bt === 'end') break;
    if (bt.startsWith('#')) continue;
    if (bt === '') {
      section++;
      if (section > 2) throw new ScenarioSyntaxError(bNo, 'txn: expected end after the failure ops (a txn has three sections: compares, success ops, failure ops)');
      body.push({ text: '', words: [] });
      continue;
    }
    if (section === 0) {
      compares.push(parseCompare(bt, bNo));
      body.push({ text: bt, words: [] });
    } else {
      const ws = splitWords(bl, bNo);
      const v = plain(ws[0]);
      if (v !== 'put' && v !== 'get' && v !== 'del') throw new ScenarioSyntaxError(bNo, `txn: expected a put, get or del op, got ${ws[0]?.raw ?? bt}`);
      (section === 1 ? success : failure).push(parseKvCommand(v, ws.slice(1), bNo));
      body.push({ text: bt, words: ws });
    }
  }
  if (idx >= lines.length) throw new ScenarioSyntaxError(lineNo, 'txn: missing end (the block is: compares, blank line, success ops, blank line, failure ops, end)');
  while (body.length > 0 && body[body.length - 1]!.text === '') body.pop();
  return { command: { kind: 'txn', compares, success, failure, body }, end: idx };
}
