/**
 * etcd's server log, in the format of the release being simulated: etcd 3.4 logs through capnslog by default
 * (`2026-12-06 10:38:15.251649 I | embed: ready to serve client requests`, Raft's own lines as
 * `raft2026/12/06 10:38:15 INFO: ...`, and a `[WARNING]` banner about the deprecated logger), and through zap
 * as JSON lines with `--logger zap`; 3.5 and later only through zap. Harnesses wait for some of these lines
 * (etcd's e2e framework for "enabled capabilities for version" and "published"), operators grep others, so
 * each event carries both etcd's capnslog words and its zap message and fields.
 *
 * Lines go to stderr (etcd's default `--log-outputs`), or stdout when asked; `--log-level` filters them.
 */
import { hostNow } from '../../sim/index.js';
import type { EtcdVersion } from '../../etcd/index.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'fatal';

/** One thing etcd logs: its capnslog form (package and text) and its zap form (caller, message, fields). */
export interface LogEvent {
  readonly level: LogLevel;
  /** zap's level where etcd logs the event at another one there (etcdmain's flag errors: capnslog E, zap warn). */
  readonly zapLevel?: LogLevel | undefined;
  /** capnslog's package (`embed`, `etcdserver`, `etcdmain`); 'raft' prints Raft's own format. */
  readonly pkg: string;
  readonly text: string;
  /** zap's caller (`embed/etcd.go:247`). */
  readonly caller: string;
  readonly msg: string;
  readonly fields?: Readonly<Record<string, unknown>> | undefined;
  /** Logged by capnslog only (zap's logger has no such line in this release). */
  readonly capnslogOnly?: boolean | undefined;
  /** capnslog's N (notice) instead of I for this info line. */
  readonly notice?: boolean | undefined;
}

const RANK: Readonly<Record<LogLevel, number>> = { debug: 0, info: 1, warn: 2, error: 3, fatal: 4 };
const CAPNS: Readonly<Record<LogLevel, string>> = { debug: 'D', info: 'I', warn: 'W', error: 'E', fatal: 'C' };
const RAFT: Readonly<Record<LogLevel, string>> = { debug: 'DEBUG', info: 'INFO', warn: 'WARN', error: 'ERROR', fatal: 'FATAL' };

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

export class EtcdLog {
  constructor(
    private readonly format: 'capnslog' | 'zap',
    private readonly minLevel: LogLevel,
    private readonly version: EtcdVersion,
    private readonly write: (line: string) => void,
  ) {}

  get isZap(): boolean {
    return this.format === 'zap';
  }

  log(e: LogEvent): void {
    const zap = this.format === 'zap';
    const level = zap ? (e.zapLevel ?? e.level) : e.level;
    if (RANK[level] < RANK[this.minLevel]) return;
    const d = new Date(hostNow());
    if (zap) {
      if (e.capnslogOnly === true) return;
      // 3.4's zap encoder prints milliseconds, 3.5+ microseconds (RFC 3339, UTC).
      const iso = d.toISOString();
      const ts = this.version === '3.4' ? iso : iso.replace('Z', '000Z');
      this.write(JSON.stringify({ level, ts, caller: e.caller, msg: e.msg, ...e.fields }));
      return;
    }
    const date = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
    const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    if (e.pkg === 'raft') {
      this.write(`raft${date.replace(/-/g, '/')} ${time} ${RAFT[e.level]}: ${e.text}`);
      return;
    }
    const micros = pad(d.getMilliseconds(), 3) + '000';
    this.write(`${date} ${time}.${micros} ${e.notice === true ? 'N' : CAPNS[e.level]} | ${e.pkg}: ${e.text}`);
  }

  /** A line that is no log event (etcd's `[WARNING]` banner of the deprecated logger). */
  raw(line: string): void {
    this.write(line);
  }
}

/** etcd's --log-level words (3.4 also takes them upper-cased? no: zap's level names, lower case). */
export const LOG_LEVELS: readonly string[] = ['debug', 'info', 'warn', 'error', 'panic', 'fatal'];

/** The level a --log-level word names (panic counts as fatal here: neither is ever logged but at exit). */
export function logLevelOf(word: string): LogLevel {
  return word === 'panic' ? 'fatal' : (word as LogLevel);
}
