/**
 * A lab as a bash script that does its steps with etcdctl against a real etcd (`etcdsim run LAB --script`):
 * the transcript is already an etcdctl session, so the script is made from it — each `$ ...` line runs as it
 * is shown (a txn with its here-document), `etcdctl watch ... &` runs in the background with its lines
 * prefixed `[watch NAME]` as the transcript prefixes them, `advance` sleeps, `break` / `cancel` stop the
 * watch's etcdctl once it has printed what the transcript shows (etcd may still be delivering the last write's
 * event when that write returns), `##` notes are printed. A session (`etcdctl watch -i`, holding one watch) reads
 * its commands from a FIFO the script writes: the watch, and `progress` (etcdctl 3.4's only way to send a
 * WatchProgressRequest), whose answer the script waits for. Run against a fresh etcd (revision 1), it prints
 * what the transcript shows, except what etcd leaves free: lease IDs, clientv3's log lines, the revision a watch
 * line carries (`[watch W @3]` is the simulator's note; etcdctl prints no revision) and when background lines
 * come.
 *
 * An option that is one of etcd's own flags (a space quota: `--quota-backend-bytes`) is a `# etcd-flags:` line
 * at the script's top: the etcd the script runs against must be started with them (`scriptEtcdFlags`).
 *
 * What etcdctl 3.4 cannot do — restart or crash a member, stop reading a stream, join fragments, ask for
 * progress notifications at create, tell a session's watches apart or cancel one, a cluster's faults, an option
 * of the simulator only, variants that toggle a bug — has no script; `scriptBlockers` says why.
 */
import type { ParsedScenario } from './parser.js';

/** The scenario options that are etcd's own flags, and each option's value as that flag takes it. */
const ETCD_FLAGS: ReadonlyMap<string, (value: string) => string> = new Map([
  ['quotaBackendBytes', (v: string) => `--quota-backend-bytes=${v}`],
  // A Go duration; etcd 3.4.23 has it under its experimental name.
  ['watchProgressNotifyIntervalMs', (v: string) => `--experimental-watch-progress-notify-interval=${v}ms`],
]);

/** Why a scenario cannot be run with etcdctl against a real etcd (empty: it can). */
export function scriptBlockers(p: ParsedScenario): string[] {
  const why = new Set<string>();
  const st = p.settings;
  if (st.members !== undefined) why.add(`a cluster of ${st.members} members and its faults`);
  if (st.variants.length > 0) why.add('variants that switch etcd behaviours (a bug, its fix) on and off');
  for (const k of st.options.keys()) if (k !== 'etcd-version' && !ETCD_FLAGS.has(k)) why.add(`option ${k} (a setting of the simulator)`);
  if (st.fromSnapshot !== undefined) why.add('a start from a snapshot file');
  // An `etcdctl watch -i` session can be scripted while it holds one watch: it prints its watches' lines without
  // saying which, and it has no command that cancels one.
  const sessions = new Map<string, Set<string>>();
  const sessionOf = new Map<string, string>();
  for (const step of p.steps) {
    if (step.type !== 'command' || step.command.kind !== 'watch' || step.command.stream === undefined) continue;
    const names = sessions.get(step.command.stream) ?? new Set<string>();
    sessions.set(step.command.stream, names.add(step.command.name));
    sessionOf.set(step.command.name, step.command.stream);
  }
  for (const [session, names] of sessions) {
    if (names.size > 1) why.add(`session ${session}'s ${names.size} watches (etcdctl watch -i prints every watch of its session without saying which)`);
  }
  for (const step of p.steps) {
    if (step.type === 'cluster') why.add(`${step.cluster.kind} (a cluster lever)`);
    if (step.type === 'command') {
      const c = step.command;
      if (c.kind === 'watch' && c.fragment) why.add('watch --fragment (clientv3 WithFragment; etcdctl has no flag for it)');
      if (c.kind === 'watch' && c.progressNotify) why.add('watch --progress-notify (etcdctl 3.4.23 has no flag for it; 3.5 added one)');
      if (c.kind === 'endpoint-status') why.add(`${c.kind} (prints the member's own address and IDs)`);
    }
    if (step.type === 'directive') {
      const d = step.directive;
      if (d.kind === 'slow' || d.kind === 'drain') why.add(`${d.kind} (a client that stops reading its stream)`);
      if (d.kind === 'progress' && !sessionOf.has(d.name)) why.add(`progress ${d.name} (a WatchProgressRequest: only etcdctl watch -i sends one, so the watch must be typed into a session, --stream=S)`);
      if (d.kind === 'cancel' && sessionOf.has(d.name)) why.add(`cancel ${d.name} (etcdctl watch -i has no command that cancels one watch of its session)`);
      if (d.kind === 'snapshot' || d.kind === 'restore') why.add(`${d.kind} (a member's state taken and put back)`);
      if (d.kind === 'restart' || d.kind === 'crash-during-compact') why.add(`${d.kind} (a member killed and started again)`);
    }
  }
  return [...why];
}

/**
 * What a lab says about its script in `#` lines (comments to the simulator): `# script-free /REGEX/` names lines
 * whose text depends on the moment on a real etcd (a lease's remaining TTL), left out of the comparison on both
 * sides; `# script-unchecked: WHY` says why the script cannot be checked against etcd at all (a compaction that
 * must fall between two of etcd's sync steps: a moment a script cannot pick).
 */
export function scriptNotes(text: string): { free: RegExp[]; unchecked: string | undefined } {
  const free = [...text.matchAll(/^# script-free \/(.+)\/\s*$/gm)].map((m) => new RegExp(m[1]!));
  const unchecked = /^# script-unchecked: (.+)$/m.exec(text)?.[1]?.trim();
  return { free, unchecked };
}

/** `advance` in the transcript: `# advance 100ms → t=0.1s`. */
const ADVANCE = /^# advance (\d+(?:\.\d+)?)(ms|s|m) → /;
/** A background watch opened or resumed: `$ etcdctl watch ... &   # watch W, at rev 2` / `# W resumed, at rev 9`. */
const WATCH = /^\$ (etcdctl .*watch .*) &   # (?:watch (\S+),|(\S+) resumed,)/;
/** The client stops a watch: `# break W: ...`, `# cancel W: ...`. */
const STOP = /^# (?:break|cancel) (\S+): /;
/** An interactive session opened: `$ etcdctl watch -i &   # session S: one Watch stream; ...`. */
const SESSION = /^\$ (etcdctl .*watch -i) &   # session (\S+): /;
/** A watch typed into a session: `S> watch /k --rev=2   # watch W on session S's stream, at rev 5`. */
const TYPED = /^(\S+)> (watch .*?)   # watch (\S+) on session /;
/** The client asks for a progress notification: `# progress W: the client sends a WatchProgressRequest ...`. */
const PROGRESS = /^# progress (\S+): /;
/** A line a session printed for its whole stream: `[session S] progress notify: 53`. */
const SESSION_LINE = /^\[session (\S+)\] /;
/** A line a background watch printed: `[watch W @3] PUT`, `[watch W] Error: ...`. */
const WATCH_LINE = /^\[watch (\S+?)(?: @\d+)?\] /;
/** A granted lease, as etcdctl prints it. */
const GRANTED = /^lease ([0-9a-f]{16}) granted with TTL/;

/** The transcript's options line: `# options: quotaBackendBytes=65536, ...`. */
const OPTIONS = /^# options: (.*)$/;
/** The script's line naming the flags its etcd needs. */
const FLAGS = /^# etcd-flags: (.*)$/m;

/** The etcd flags a lab's script needs (its `# etcd-flags:` line), as etcd takes them. */
export function scriptEtcdFlags(script: string): string[] {
  return FLAGS.exec(script)?.[1]?.split(' ').filter((f) => f !== '') ?? [];
}

/** What every script starts with: etcdctl's settings, the watch count, and waiting for a watch to register. */
const PRELUDE = String.raw`export ETCDCTL_API=3
export ETCDCTL_ENDPOINTS="${'$'}{ETCDCTL_ENDPOINTS:-127.0.0.1:2379}"
# How many watchers etcd has (its /metrics, read without curl through bash's /dev/tcp).
watchers() {
  local hp="${'$'}{ETCDCTL_ENDPOINTS%%,*}"; hp="${'$'}{hp#*://}"
  exec 3<>"/dev/tcp/${'$'}{hp%:*}/${'$'}{hp##*:}" || return 1
  printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
  sed -n 's/^etcd_debugging_mvcc_watcher_total //p' <&3
  exec 3<&-
}
# Waits until etcd counts more than $1 watchers (the watch just started in the background, process $2, has
# registered, so the next write reaches it), its etcdctl has exited (a watch canceled at once), or 10 s passed.
registered() {
  local n
  for n in $(seq 200); do
    [ "$(watchers)" -gt "$1" ] && return 0
    kill -0 "$2" 2>/dev/null || return 0
    sleep 0.05
  done
}
# Each background watch's lines also go to a file of its own, so that the script can wait for them.
WATCHES="$(mktemp -d)"; trap 'rm -rf "$WATCHES"' EXIT
# Waits until background watch $1 has printed $2 lines (as many as the transcript shows by now): etcd may still be
# sending an event when the write that made it returns, and stopping that etcdctl then would lose it. Gives up
# loudly, on stderr, after 10 s.
printed() {
  local n
  for n in $(seq 400); do
    [ "$(cat "$WATCHES/$1" 2>/dev/null | wc -l)" -ge "$2" ] && return 0
    sleep 0.025
  done
  echo "watch $1 printed $(cat "$WATCHES/$1" 2>/dev/null | wc -l) lines in 10 s; the transcript shows $2" >&2
}
# How long to let a background watch print lines the transcript does not show (there should be none) before the
# script ends.
SETTLE="${'$'}{SETTLE:-1}"
`;

/** The script of a lab, from its transcript (one run's, or the whole of a lab without variants). */
export function labScript(name: string, transcript: readonly string[], unchecked?: string): string {
  const out: string[] = [
    '#!/usr/bin/env bash',
    `# ${name}: the lab's steps with etcdctl (etcdsim run ${name} --script). Run it against a fresh etcd 3.4:`,
    `#   ETCDCTL_ENDPOINTS=127.0.0.1:2379 bash ${name.replace(/\//g, '-')}.sh`,
    '# It prints what the transcript shows, but for lease IDs, clientv3\'s log lines, the revision the transcript adds',
    '# to a watch\'s lines, and where a background watch\'s lines fall between the commands\' lines.',
    ...(unchecked !== undefined ? [`# Not the same on every run: ${unchecked}.`] : []),
    ...etcdFlags(transcript),
    PRELUDE,
  ];
  const leases = new Map<string, string>();
  const watches = new Set<string>();
  /** How many lines each watch has printed so far in the transcript. */
  const printed = new Map<string, number>();
  /** Each `etcdctl watch -i` session's one watch, and the sessions still open (their stdin a FIFO the script writes). */
  const sessionWatch = new Map<string, string>();
  const open = new Set<string>();
  let started = false;
  /** A command's text with the simulator's lease IDs replaced by the variables holding etcd's. */
  const withLeases = (text: string): string => {
    let t = sq(text);
    for (const [id, v] of leases) t = t.split(id).join(`'"$${v}"'`);
    return t.replace(/^''/, '').replace(/''$/, '');
  };
  const literal = (text: string): string => {
    let t = text;
    for (const [id, v] of leases) t = t.split(id).join(`$${v}`);
    return t;
  };
  for (let i = 0; i < transcript.length; i++) {
    const line = transcript[i]!;
    if (line === '' && !started) {
      // The blank line after the description (later ones are etcdctl's own output).
      out.push('echo');
      continue;
    }
    if (line.startsWith('##')) {
      out.push(`echo ${sq(line)}`);
      continue;
    }
    const adv = ADVANCE.exec(line);
    if (adv !== null) {
      const ms = Number(adv[1]) * (adv[2] === 'ms' ? 1 : adv[2] === 's' ? 1000 : 60_000);
      out.push(`sleep ${ms / 1000}   ${line}`);
      continue;
    }
    const shown = WATCH_LINE.exec(line)?.[1] ?? sessionWatch.get(SESSION_LINE.exec(line)?.[1] ?? '');
    if (shown !== undefined) printed.set(shown, (printed.get(shown) ?? 0) + 1);
    const stop = STOP.exec(line);
    if (stop !== null && watches.has(stop[1]!)) {
      const wn = stop[1]!;
      const session = [...sessionWatch].find(([, w]) => w === wn)?.[0];
      const close = session !== undefined && open.delete(session) ? `; exec {${fd(session)}}>&-` : '';
      out.push(`printed ${sq(wn)} ${printed.get(wn) ?? 0}; kill "$${pid(wn)}"; wait "$${pid(wn)}" 2>/dev/null${close}   ${line}`);
      continue;
    }
    const session = SESSION.exec(line);
    if (session !== null) {
      // Its one watch (scriptBlockers refuses a session with more) is typed into it on the next line.
      const sn = session[2]!;
      const wn = TYPED.exec(transcript[i + 1] ?? '')?.[3] ?? sn;
      started = true;
      watches.add(wn);
      sessionWatch.set(sn, wn);
      open.add(sn);
      out.push(`echo ${sq(line)}`, ...openSession(session[1]!, sn, wn));
      continue;
    }
    const typed = TYPED.exec(line);
    if (typed !== null && open.has(typed[1]!)) {
      out.push(`echo ${sq(line)}`, 'n=$(watchers)', `echo ${sq(typed[2]!)} >&"$${fd(typed[1]!)}"`, `registered "$n" "$${pid(typed[3]!)}"`);
      continue;
    }
    const progress = PROGRESS.exec(line);
    const via = [...sessionWatch].find(([sn, w]) => w === progress?.[1] && open.has(sn))?.[0];
    if (via !== undefined) {
      // The answer must arrive before the next write, or it would report that write's revision too.
      const wn = sessionWatch.get(via)!;
      const answered = (printed.get(wn) ?? 0) + answerLines(transcript, i, via, wn);
      out.push(`echo progress >&"$${fd(via)}"; printed ${sq(wn)} ${answered}   ${line}`);
      continue;
    }
    const w = WATCH.exec(line);
    if (w !== null) {
      const wn = (w[2] ?? w[3])!;
      started = true;
      watches.add(wn);
      out.push(`echo ${withLeases(line)}`, 'n=$(watchers)');
      out.push(`${literal(w[1]!)} > >(sed -u ${sq(`s/^/[watch ${wn}] /`)} | tee -a "$WATCHES/"${sq(wn)}) 2>&1 &`);
      out.push(`${pid(wn)}=$!; registered "$n" "$${pid(wn)}"`);
      continue;
    }
    if (!line.startsWith('$ ')) continue;
    started = true;
    // A command, with its here-document if it has one.
    const doc: string[] = [];
    if (/<<EOF(\s|$)/.test(line)) {
      for (i++; i < transcript.length && transcript[i] !== 'EOF'; i++) doc.push(transcript[i]!);
      doc.push('EOF');
    }
    const cmd = literal(line.slice(2));
    out.push(`echo ${withLeases(line)}${doc.length > 0 ? `; printf '%s\\n' ${doc.map(sq).join(' ')}` : ''}`);
    if (/^etcdctl (?:--endpoints=\S+ )?lease grant /.test(line.slice(2)) && GRANTED.test(transcript[i + 1] ?? '')) {
      const v = `LEASE${leases.size + 1}`;
      out.push(`${cmd.replace(/\s+#.*$/, '')} 2>&1 | tee /tmp/etcdsim-lease.$$`);
      out.push(`${v}=$(sed -n 's/^lease \\([0-9a-f]*\\) granted.*/\\1/p' /tmp/etcdsim-lease.$$); rm -f /tmp/etcdsim-lease.$$`);
      leases.set(GRANTED.exec(transcript[i + 1]!)![1]!, v);
      continue;
    }
    out.push(doc.length > 0 ? [`${cmd.replace(/<<EOF/, '<<EOF 2>&1')}`, ...doc].join('\n') : `${cmd.replace(/(\s+#.*)?$/, ' 2>&1$1')}`);
  }
  if (watches.size > 0) out.push(...stopAll(watches, printed, open));
  return `${out.join('\n')}\n`;
}

/** The script's end: each background watch has printed what the transcript shows, and then some time for more. */
function stopAll(watches: ReadonlySet<string>, printed: ReadonlyMap<string, number>, sessions: ReadonlySet<string>): string[] {
  return [
    '# Let the background watches print what is on its way, then stop them.',
    ...[...watches].map((wn) => `printed ${sq(wn)} ${printed.get(wn) ?? 0}`),
    'sleep "$SETTLE"',
    ...[...watches].map((wn) => `kill "$${pid(wn)}" 2>/dev/null`),
    ...[...sessions].map((sn) => `exec {${fd(sn)}}>&-`),
    'wait 2>/dev/null',
  ];
}

/** The `# etcd-flags:` line for the transcript's options that are etcd flags (none: no line). */
function etcdFlags(transcript: readonly string[]): string[] {
  const opts = transcript.map((l) => OPTIONS.exec(l)?.[1]).find((o) => o !== undefined);
  const flags = (opts ?? '').split(', ').flatMap((kv) => {
    const [k, v] = kv.split('=');
    const flag = ETCD_FLAGS.get(k ?? '');
    return flag !== undefined ? [flag(v ?? '')] : [];
  });
  return flags.length > 0 ? ['# Start that etcd with these flags:', `# etcd-flags: ${flags.join(' ')}`] : [];
}

/** The variable holding a background watch's process ID. */
function pid(watch: string): string {
  return `PID_${watch.replace(/[^A-Za-z0-9_]/g, '_')}`;
}

/**
 * Starts session `sn` (`etcdctl watch -i`, its one watch `wn`) reading its commands from a FIFO the script keeps
 * open; its lines are labelled as the transcript labels them: the stream's progress answers by session, the rest
 * by watch.
 */
function openSession(command: string, sn: string, wn: string): string[] {
  const label = `s/^progress notify: /[session ${sn}] &/;t;s/^/[watch ${wn}] /`;
  const fifo = `"$WATCHES/"${sq(`${sn}.in`)}`;
  return [
    `mkfifo ${fifo}`,
    `${command} < ${fifo} > >(sed -u ${sq(label)} | tee -a "$WATCHES/"${sq(wn)}) 2>&1 &`,
    `${pid(wn)}=$!; exec {${fd(sn)}}>${fifo}`,
  ];
}

/** How many lines the transcript shows session `sn` (watch `wn`) printing after line `at`, before the next step. */
function answerLines(transcript: readonly string[], at: number, sn: string, wn: string): number {
  let n = 0;
  for (let j = at + 1; j < transcript.length && !/^(\$ |\S+> |# (progress|break|cancel) )/.test(transcript[j]!); j++) {
    if (SESSION_LINE.exec(transcript[j]!)?.[1] === sn || WATCH_LINE.exec(transcript[j]!)?.[1] === wn) n++;
  }
  return n;
}

/** The variable holding the file descriptor the script types a session's commands into. */
function fd(session: string): string {
  return `FD_${session.replace(/[^A-Za-z0-9_]/g, '_')}`;
}

/** Any text as one single-quoted shell word. */
function sq(s: string): string {
  return `'${s.replace(/'/g, "'\\''")}'`;
}
