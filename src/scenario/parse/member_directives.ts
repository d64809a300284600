/**
 * Directives that stop and start the scenario's one member: `restart` (SIGKILL, then etcd starts again and
 * rebuilds itself from its backend) and `crash-during-compact REV --after-batches=N` (etcdctl compact REV,
 * and the member is killed once its backend has committed N batches of the compaction's deletions; it
 * starts again from what the backend then holds, and resumes the compaction).
 */
import { noMore } from './arguments.js';
import { intFlag, parseFlags } from './flags.js';
import { couldBeInt, type Word } from './lexer.js';
import { ScenarioSyntaxError } from './syntax_error.js';

/** A restart of the member, or a compaction cut short by its death (and the restart after it). */
export type MemberDirective =
  | { readonly kind: 'restart' }
  | { readonly kind: 'crash-during-compact'; readonly rev: Word; readonly afterBatches: Word };

const CRASH_USAGE = 'crash-during-compact REV --after-batches=N';

/**
 * `restart` or `crash-during-compact ...`; undefined for another verb, and for `restart` with arguments
 * (a cluster member's restart, which is not this single member's).
 */
export function parseMemberDirective(verb: string, args: readonly Word[], lineNo: number): MemberDirective | undefined {
  switch (verb) {
    case 'restart':
      if (args.length > 0) return undefined;
      return { kind: 'restart' };
    case 'crash-during-compact': {
      const f = parseFlags(args, { bool: [], value: ['--after-batches'] }, lineNo, CRASH_USAGE);
      const rev = f.positional[0];
      if (rev === undefined || !couldBeInt(rev)) throw new ScenarioSyntaxError(lineNo, `crash-during-compact expects the compaction revision (usage: ${CRASH_USAGE})`);
      noMore(f.positional, 1, lineNo, 'crash-during-compact');
      const afterBatches = intFlag(f, '--after-batches', lineNo);
      if (afterBatches === undefined) throw new ScenarioSyntaxError(lineNo, `crash-during-compact needs --after-batches=N: the batches of deletions committed before the kill (usage: ${CRASH_USAGE})`);
      return { kind: 'crash-during-compact', rev, afterBatches };
    }
    default:
      return undefined;
  }
}
