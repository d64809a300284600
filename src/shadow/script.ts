/**
 * A shadow divergence as a scenario script (scenarios/README.md) that `etcdsim run` plays: the requests the
 * simulator was given, in the order it applied them, as etcdctl lines, each followed by what the real etcd
 * answered as an expectation (its header revision, its error, a read's keys and values, a watch's events). A
 * run on the simulator therefore stops at the first step it answers otherwise than etcd did — the divergent
 * step, with its line number — and `etcdsim run FILE --script` turns the same lines into an etcdctl session
 * for a real etcd.
 *
 * The script language is etcdctl's, so not every request has a line: a read it cannot say (a sorted or
 * filtered range, a Status, a member list) is left out with a comment (reads change nothing); a write it
 * cannot say (a txn, an auth change, a lock) ends the script there, since every later revision would be off.
 * scenario.json holds every step; `etcdsim diff --replay` plays it all against a real etcd.
 */
import { Buffer } from 'node:buffer';
import { bytesEqual, prefixEnd } from '../mvcc/index.js';
import type * as M from '../server/messages.js';
import type { ScenarioEntry, ScenarioFile } from './scenario.js';

type Msg = Record<string, unknown>;
type Answer = { ok?: Msg; err?: { code: number; details: string } };

/** A byte string as one shell word of the script language: bare when plain, else `$'...'` with escapes. */
function word(b: unknown): string {
  const buf = toBytes(b);
  const s = buf.toString('latin1');
  if (s !== '' && /^[A-Za-z0-9/_.:=+-]+$/.test(s)) return s;
  let out = "$'";
  for (const c of buf) out += c >= 0x20 && c < 0x7f && c !== 0x27 && c !== 0x5c ? String.fromCharCode(c) : `\\x${c.toString(16).padStart(2, '0')}`;
  return `${out}'`;
}

function toBytes(b: unknown): Buffer {
  if (Buffer.isBuffer(b)) return b;
  if (b instanceof Uint8Array) return Buffer.from(b);
  if (typeof b === 'string') return Buffer.from(b, 'base64');
  return Buffer.alloc(0);
}

/** A key and range end as etcdctl's arguments: KEY, KEY END, KEY --prefix, KEY --from-key. */
function rangeArgs(key: unknown, end: unknown): string {
  const k = toBytes(key);
  const e = toBytes(end);
  if (e.length === 0) return word(k);
  if (e.length === 1 && e[0] === 0) return `${word(k)} --from-key`;
  // etcdctl's --prefix end; a key it has none for (all 0xff) is --from-key's "\0", taken above.
  if (bytesEqual(prefixEnd(k), e)) return `${word(k)} --prefix`;
  return `${word(k)} ${word(e)}`;
}

const num = (v: unknown): number => Number(v ?? 0);
const hex = (v: unknown): string => BigInt(String(v ?? 0)).toString(16);

/** Reads: left out when the script cannot say them. Anything else it cannot say ends the script. */
const READS = new Set(['KV.Range', 'Lease.LeaseLeases', 'Lease.LeaseTimeToLive', 'Maintenance.Status', 'Maintenance.Hash', 'Maintenance.HashKV', 'Maintenance.Alarm', 'Cluster.MemberList', 'Election.Leader', 'Auth.AuthStatus', 'Auth.UserGet', 'Auth.UserList', 'Auth.RoleGet', 'Auth.RoleList']);

export function scenarioScript(file: ScenarioFile, where: string): string {
  const out: string[] = [
    `## A shadow divergence: ${where}.`,
    '## The requests the simulator was given, each followed by the real etcd\'s answer as an expectation: on the',
    '## simulator the run stops at the step it answers otherwise. (Written by etcdsim shadow; scenario.json beside',
    '## it holds every request, for etcdsim diff --replay.)',
    `etcd-version ${file.etcdVersion}`,
  ];
  if (!file.complete) out.push('# The etcd held data before these steps (or older steps were dropped): the answers below assume that state.');
  if (file.startRevision > 1) {
    // The scenario starts at revision R on a fresh member: R - 1 writes get there (a put, then deletes of it).
    out.push(`put $'\\x00etcdsim-pad' ''`);
    if (file.startRevision > 2) out.push(`repeat ${file.startRevision - 2} del $'\\x00etcdsim-pad'`);
  }
  const leases = new Map<string, string>();
  const lease = (id: unknown): string => leases.get(String(id)) ?? hex(id);
  /** Watches by stream and etcd's watch ID: their script names, and etcd's events for each. */
  const watches = new Map<string, { name: string; events: string[] }>();
  // etcd's events are recorded as they arrived, which may be before the simulator took the watch's creation.
  const events = new Map<string, string[]>();
  for (const step of file.steps) {
    if (step.rpc !== 'Watch.Watch' || step.request !== undefined) continue;
    const res = ((step.etcd as Answer).ok ?? {}) as Partial<M.WatchResponse>;
    const id = `${step.stream ?? 0}/${String(res.watch_id ?? 0)}`;
    const list = events.get(id) ?? [];
    for (const e of res.events ?? []) list.push(`${e.type === 'DELETE' ? 'DELETE' : 'PUT'} ${word(e.kv?.key)}@${num(e.kv?.mod_revision)}`);
    events.set(id, list);
  }
  let stopped: string | undefined;
  for (const step of file.steps) {
    if (stopped !== undefined) break;
    const ans = step.etcd as Answer;
    const expect = (extra: string[] = []): void => {
      if (ans.err !== undefined) out.push(`expect error ${JSON.stringify(ans.err.details)}`);
      else out.push(`expect revision == ${num((ans.ok?.['header'] as Msg | undefined)?.['revision'])}`, ...extra);
    };
    const line = lineOf(step, lease, leases, watches, events);
    if (line === 'events') continue;
    if (line === undefined) {
      if (READS.has(step.rpc)) out.push(`# ${step.rpc}: a read the script cannot say (left out)`);
      else stopped = step.rpc;
      continue;
    }
    out.push(...line.lines);
    if (line.expect) expect(line.extra?.(ans.ok ?? {}) ?? []);
  }
  if (stopped !== undefined) out.push(`# ${stopped}: a write the script cannot say; the rest is in scenario.json (etcdsim diff --replay)`);
  if (watches.size > 0) out.push('advance 100ms');
  for (const w of watches.values()) out.push(`expect watch ${w.name} events == [${w.events.join(', ')}]`);
  return out.join('\n') + '\n';
}

interface Line {
  readonly lines: string[];
  /** Followed by etcd's answer as an expectation. */
  readonly expect: boolean;
  readonly extra?: (ok: Msg) => string[];
}

function lineOf(step: ScenarioEntry, lease: (id: unknown) => string, leases: Map<string, string>, watches: Map<string, { name: string; events: string[] }>, events: ReadonlyMap<string, string[]>): Line | 'events' | undefined {
  const r = (step.request ?? {}) as Msg;
  switch (step.rpc) {
    case 'KV.Put': {
      if (r['ignore_value'] === true || r['ignore_lease'] === true) return undefined;
      const l = num(r['lease']) === 0 ? '' : ` --lease=${lease(r['lease'])}`;
      return { lines: [`put ${word(r['key'])} ${toBytes(r['value']).length === 0 ? "''" : word(r['value'])}${l}${r['prev_kv'] === true ? ' --prev-kv' : ''}`], expect: true };
    }
    case 'KV.DeleteRange':
      return { lines: [`del ${rangeArgs(r['key'], r['range_end'])}${r['prev_kv'] === true ? ' --prev-kv' : ''}`], expect: true };
    case 'KV.Range': {
      const plain = ['sort_order', 'sort_target', 'min_mod_revision', 'max_mod_revision', 'min_create_revision', 'max_create_revision'].every((f) => r[f] === undefined || r[f] === 'NONE' || r[f] === 'KEY' || r[f] === '0' || r[f] === 0);
      if (!plain || r['count_only'] === true || r['serializable'] === true) return undefined;
      const rev = num(r['revision']) > 0 ? ` --rev=${num(r['revision'])}` : '';
      const limit = num(r['limit']) > 0 ? ` --limit=${num(r['limit'])}` : '';
      return {
        lines: [`get ${rangeArgs(r['key'], r['range_end'])}${rev}${limit}${r['keys_only'] === true ? ' --keys-only' : ''}`],
        expect: true,
        extra: (ok) => {
          const kvs = (ok['kvs'] ?? []) as M.KeyValue[];
          const at = num(r['revision']) > 0 ? num(r['revision']) : num((ok['header'] as Msg | undefined)?.['revision']);
          const values = r['keys_only'] === true ? [] : kvs.map((kv) => `expect get ${word(kv.key)} --rev=${at} == ${toBytes(kv.value).length === 0 ? "''" : word(kv.value)}`);
          return [`expect keys == [${kvs.map((kv) => word(kv.key)).join(', ')}]`, ...values];
        },
      };
    }
    case 'KV.Compact':
      return { lines: [`compact ${num(r['revision'])}${r['physical'] === true ? ' --physical' : ''}`], expect: false };
    case 'Lease.LeaseGrant': {
      const name = `L${leases.size + 1}`;
      const id = String((step.etcd as Answer).ok?.['ID'] ?? r['ID']);
      leases.set(id, `\${${name}}`);
      return { lines: [`lease grant ${num(r['TTL'])}`, `${name} = lease`], expect: false };
    }
    case 'Lease.LeaseRevoke':
      return { lines: [`lease revoke ${lease(r['ID'])}`], expect: true };
    case 'Lease.LeaseTimeToLive':
      return { lines: [`lease timetolive ${lease(r['ID'])}${r['keys'] === true ? ' --keys' : ''}`], expect: false };
    case 'Lease.LeaseKeepAlive':
      return { lines: [`lease keep-alive ${lease(r['ID'])} --once`], expect: false };
    case 'Watch.Watch':
      return watchLine(step, watches, events);
    default:
      return undefined;
  }
}

/** A watch stream's request (a creation, a cancel, a progress request) or etcd's events on it. */
function watchLine(step: ScenarioEntry, watches: Map<string, { name: string; events: string[] }>, events: ReadonlyMap<string, string[]>): Line | 'events' | undefined {
  const s = step.stream ?? 0;
  const res = ((step.etcd as Answer).ok ?? {}) as Partial<M.WatchResponse>;
  const id = `${s}/${String(res.watch_id ?? 0)}`;
  if (step.request === undefined) return 'events';
  const r = step.request as Partial<M.WatchRequest>;
  const c = r.create_request;
  if (c != null) {
    if ((c.filters ?? []).length > 0 || c.fragment === true) return undefined;
    const name = `W${s}_${String(res.watch_id ?? 0)}`;
    watches.set(id, { name, events: events.get(id) ?? [] });
    const rev = num(c.start_revision) > 0 ? ` --rev=${num(c.start_revision)}` : '';
    return { lines: [`watch ${name} ${rangeArgs(c.key, c.range_end)}${rev}${c.prev_kv === true ? ' --prev-kv' : ''}${c.progress_notify === true ? ' --progress-notify' : ''} --stream=S${s}`, 'advance 100ms'], expect: false };
  }
  const w = watches.get(`${s}/${String(r.cancel_request?.watch_id ?? res.watch_id ?? 0)}`);
  if (r.cancel_request != null && w !== undefined) return { lines: [`cancel ${w.name}`], expect: false };
  if (r.progress_request != null) {
    const any = [...watches.entries()].find(([k]) => k.startsWith(`${s}/`));
    if (any !== undefined) return { lines: [`progress ${any[1].name}`], expect: false };
  }
  return undefined;
}
