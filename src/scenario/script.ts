/**
 * A lab as a bash script that does its steps with etcdctl against a real etcd (`etcdsim run LAB --script`):
 * the transcript is already an etcdctl session, so the script is made from it — each `$ ...` line runs as it
 * is shown (a txn with its here-document), `etcdctl watch ... &` runs in the background with its lines
 * prefixed `[watch NAME]` as the transcript prefixes them, `advance` sleeps, `break` / `cancel` stop the
 * watch's etcdctl, `##` notes are printed. Run against a fresh etcd (revision 1), it prints what the transcript
 * shows, except what etcd leaves free: lease IDs, clientv3's log lines, the revision a watch line carries
 * (`[watch W @3]` is the simulator's note; etcdctl prints no revision) and when background lines come.
 *
 * An option that is one of etcd's own flags (a space quota: `--quota-backend-bytes`) is a `# etcd-flags:` line
 * at the script's top: the etcd the script runs against must be started with them (`scriptEtcdFlags`).
 *
 * What etcdctl cannot do — restart or crash a member, stop reading a stream, join fragments, a cluster's
 * faults, an option of the simulator only, variants that toggle a bug — has no script; `scriptBlockers` says why.
 */
import type { ParsedScenario } from './parser.js';

/** The scenario options that are etcd's own flags, as etcd takes them. */
const ETCD_FLAGS: ReadonlyMap<string, string> = new Map([['quotaBackendBytes', '--quota-backend-bytes']]);

/** Why a scenario cannot be run with etcdctl against a real etcd (empty: it can). */
export function scriptBlockers(p: ParsedScenario): string[] {
  const why = new Set<string>();
  const st = p.settings;
  if (st.members !== undefined) why.add(`a cluster of ${st.members} members and its faults`);
  if (st.variants.length > 0) why.add('variants that switch etcd behaviours (a bug, its fix) on and off');
  for (const k of st.options.keys()) if (k !== 'etcd-version' && !ETCD_FLAGS.has(k)) why.add(`option ${k} (a setting of the simulator)`);
  if (st.fromSnapshot !== undefined) why.add('a start from a snapshot file');
  for (const step of p.steps) {
    if (step.type === 'cluster') why.add(`${step.cluster.kind} (a cluster lever)`);
    if (step.type === 'command') {
      const c = step.command;
      if (c.kind === 'watch' && c.fragment) why.add('watch --fragment (clientv3 WithFragment; etcdctl has no flag for it)');
      if (c.kind === 'watch' && c.stream !== undefined) why.add('watch --stream (etcdctl watch -i: one process prints every watch of its session without saying which, and has no cancel)');
      if (c.kind === 'endpoint-status') why.add(`${c.kind} (prints the member's own address and IDs)`);
    }
    if (step.type === 'directive') {
      const d = step.directive;
      if (d.kind === 'slow' || d.kind === 'drain') why.add(`${d.kind} (a client that stops reading its stream)`);
      if (d.kind === 'progress') why.add('progress (a WatchProgressRequest on a background watch\'s stream)');
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
    const shown = WATCH_LINE.exec(line);
    if (shown !== null) printed.set(shown[1]!, (printed.get(shown[1]!) ?? 0) + 1);
    const stop = STOP.exec(line);
    if (stop !== null && watches.has(stop[1]!)) {
      const wn = stop[1]!;
      out.push(`printed ${sq(wn)} ${printed.get(wn) ?? 0}; kill "$${pid(wn)}"; wait "$${pid(wn)}" 2>/dev/null   ${line}`);
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
  if (watches.size > 0) {
    out.push('# Let the background watches print what is on its way, then stop them.');
    for (const wn of watches) out.push(`printed ${sq(wn)} ${printed.get(wn) ?? 0}`);
    out.push('sleep "$SETTLE"');
    for (const wn of watches) out.push(`kill "$${pid(wn)}" 2>/dev/null`);
    out.push('wait 2>/dev/null');
  }
  return `${out.join('\n')}\n`;
}

/** The `# etcd-flags:` line for the transcript's options that are etcd flags (none: no line). */
function etcdFlags(transcript: readonly string[]): string[] {
  const opts = transcript.map((l) => OPTIONS.exec(l)?.[1]).find((o) => o !== undefined);
  const flags = (opts ?? '').split(', ').flatMap((kv) => {
    const [k, v] = kv.split('=');
    const flag = ETCD_FLAGS.get(k ?? '');
    return flag !== undefined ? [`${flag}=${v ?? ''}`] : [];
  });
  return flags.length > 0 ? ['# Start that etcd with these flags:', `# etcd-flags: ${flags.join(' ')}`] : [];
}

/** The variable holding a background watch's process ID. */
function pid(watch: string): string {
  return `PID_${watch.replace(/[^A-Za-z0-9_]/g, '_')}`;
}

/** Any text as one single-quoted shell word. */
function sq(s: string): string {
  return `'${s.replace(/'/g, "'\\''")}'`;
}
