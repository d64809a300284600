/**
 * etcd's `--config-file` (or `ETCD_CONFIG_FILE`): a YAML file whose keys are the flags' names, read instead of
 * the command line and the environment (etcd ignores both once a file is given). URL lists are
 * comma-separated strings as in etcd's file, the client and peer TLS settings sit under
 * `client-transport-security` / `peer-transport-security`, and keys etcd does not know are ignored, as its
 * JSON decoding ignores them. A value is checked as the flag's would be; a file that cannot be read or
 * parsed stops etcd (exit 1).
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { FlagValueError } from '../go_flags.js';
import type { EtcdFlag } from './flag_table.js';
import { EtcdFlagError, checkFlagValue } from './flag_set.js';

/** The security sections' keys and the flags they stand for. */
const SECURITY: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  'client-transport-security': { 'cert-file': 'cert-file', 'key-file': 'key-file', 'client-cert-auth': 'client-cert-auth', 'trusted-ca-file': 'trusted-ca-file', 'auto-tls': 'auto-tls' },
  'peer-transport-security': {
    'cert-file': 'peer-cert-file',
    'key-file': 'peer-key-file',
    'client-cert-auth': 'peer-client-cert-auth',
    'trusted-ca-file': 'peer-trusted-ca-file',
    'auto-tls': 'peer-auto-tls',
  },
};

/** The file's settings as flag values (strings, as on a command line). */
export function readConfigFile(path: string, known: ReadonlyMap<string, EtcdFlag>): Map<string, string> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as { code?: string }).code;
    throw new EtcdFlagError(`open ${path}: ${code === 'ENOENT' ? 'no such file or directory' : code === 'EISDIR' ? 'is a directory' : String(code)}`, 1);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new EtcdFlagError(`error converting YAML to JSON: yaml: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`, 1);
  }
  const values = new Map<string, string>();
  if (doc === null || doc === undefined) return values;
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new EtcdFlagError('error unmarshaling JSON: json: cannot unmarshal value into Go value of type embed.configYAML', 1);
  const set = (flag: string, v: unknown): void => {
    const f = known.get(flag);
    if (f === undefined || v === null || v === undefined) return;
    const s = Array.isArray(v) ? v.map(String).join(',') : String(v);
    if (f.kind === 'bool' && typeof v !== 'boolean') throw new EtcdFlagError(`error unmarshaling JSON: json: cannot unmarshal ${typeof v} into Go struct field configYAML.${flag} of type bool`, 1);
    try {
      checkFlagValue(f.kind, s);
    } catch (err) {
      if (err instanceof FlagValueError) throw new EtcdFlagError(`unexpected error setting up ${flag}: ${err.reason}`, 1);
      throw err;
    }
    values.set(flag, s);
  };
  for (const [key, v] of Object.entries(doc as Record<string, unknown>)) {
    const section = SECURITY[key];
    if (section !== undefined && typeof v === 'object' && v !== null) {
      for (const [k, sv] of Object.entries(v as Record<string, unknown>)) if (section[k] !== undefined) set(section[k], sv);
    } else if (key !== 'config-file') set(key, v);
  }
  return values;
}
