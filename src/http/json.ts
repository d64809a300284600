/**
 * JSON as etcd's gRPC gateway (grpc-gateway v1 with golang/protobuf's jsonpb, `OrigName: true`,
 * `EmitDefaults: false`) reads and writes it, mapped to and from the services' message form
 * (proto-loader's: keepCase, int64 as decimal strings, bytes as Buffers, enums as names):
 *
 * - out: fields under their proto names in declaration order; int64/uint64 as strings, 32-bit integers as
 *   numbers, bytes as standard base64, enums by name; fields at their default (0, "", false, empty bytes,
 *   empty list, enum 0, absent message) are left out; a present message is written even when empty.
 *   Strings are escaped as Go's encoding/json escapes them (`<`, `>`, `&`, U+2028/9 as \u00XX).
 * - in: a field may be named by its proto name or its JSON name (lowerCamelCase: `prevKv`); unknown
 *   fields are ignored; `null` is absent. Values go to the services as they are (base64 strings for bytes,
 *   numbers or strings for int64, enum names or numbers) — the services' own readers convert them, once.
 *
 * The schema comes from the same .proto files the gRPC server loads, through the same loader (src/proto).
 */
import { etcdPackageDefinition } from '../proto/index.js';

type FieldKind = 'message' | 'enum' | 'bytes' | 'int64' | 'int32' | 'bool' | 'string';

interface FieldSpec {
  readonly name: string;
  readonly jsonName: string;
  readonly kind: FieldKind;
  readonly repeated: boolean;
  /** Full name of the message type (kind 'message'). */
  readonly messageType?: string | undefined;
  /** The enum (kind 'enum'): its value-0 name (the default jsonpb leaves out), names and Go type name. */
  readonly enumInfo?: EnumInfo | undefined;
}

interface EnumInfo {
  readonly zero: string | undefined;
  readonly names: ReadonlySet<string>;
  /** As Go's generated code names it: `etcdserverpb.RangeRequest_SortOrder`. */
  readonly goName: string;
}

interface MessageSpec {
  readonly fields: readonly FieldSpec[];
  readonly byInputName: ReadonlyMap<string, FieldSpec>;
}

interface DescriptorField {
  name: string;
  label: string;
  type: string;
  typeName: string;
}
interface DescriptorEnum {
  name: string;
  value: Array<{ name: string; number: number }>;
}
interface DescriptorMessage {
  field: DescriptorField[];
  nestedType?: DescriptorMessage[];
  enumType?: DescriptorEnum[];
  name?: string;
}

const KINDS: Readonly<Record<string, FieldKind>> = {
  TYPE_MESSAGE: 'message',
  TYPE_ENUM: 'enum',
  TYPE_BYTES: 'bytes',
  TYPE_INT64: 'int64',
  TYPE_UINT64: 'int64',
  TYPE_SINT64: 'int64',
  TYPE_FIXED64: 'int64',
  TYPE_SFIXED64: 'int64',
  TYPE_INT32: 'int32',
  TYPE_UINT32: 'int32',
  TYPE_SINT32: 'int32',
  TYPE_FIXED32: 'int32',
  TYPE_SFIXED32: 'int32',
  TYPE_BOOL: 'bool',
  TYPE_STRING: 'string',
};

/** protoc's JSON name: underscores dropped, the letter after one upper-cased (`prev_kv` → `prevKv`). */
function jsonNameOf(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase()).replace(/_/g, '');
}

let cached: ReadonlyMap<string, MessageSpec> | undefined;

/** Every message of etcd's API by full name (`etcdserverpb.RangeResponse`), built once. */
function schema(): ReadonlyMap<string, MessageSpec> {
  if (cached !== undefined) return cached;
  const pd = etcdPackageDefinition();
  const messages = new Map<string, DescriptorMessage>();
  // Enums by their short name (names are unique across etcd's protos).
  const enums = new Map<string, EnumInfo>();
  const addEnum = (e: DescriptorEnum, goName: string): void => {
    enums.set(e.name, { zero: e.value.find((v) => v.number === 0)?.name, names: new Set(e.value.map((v) => v.name)), goName });
  };
  const addNested = (m: DescriptorMessage, goPrefix: string): void => {
    for (const e of m.enumType ?? []) addEnum(e, `${goPrefix}_${e.name}`);
    for (const n of m.nestedType ?? []) addNested(n, `${goPrefix}_${n.name ?? ''}`);
  };
  for (const [fullName, def] of Object.entries(pd)) {
    const d = def as { format?: string; type?: unknown };
    if (d.format === 'Protocol Buffer 3 DescriptorProto') {
      const m = d.type as DescriptorMessage;
      messages.set(fullName, m);
      addNested(m, fullName);
    } else if (d.format === 'Protocol Buffer 3 EnumDescriptorProto') {
      const e = d.type as DescriptorEnum;
      addEnum({ ...e, name: fullName.slice(fullName.lastIndexOf('.') + 1) }, fullName);
    }
  }
  const shortToFull = new Map<string, string>();
  for (const full of messages.keys()) shortToFull.set(full.slice(full.lastIndexOf('.') + 1), full);
  const out = new Map<string, MessageSpec>();
  for (const [fullName, m] of messages) {
    const fields: FieldSpec[] = m.field.map((f) => {
      const kind = KINDS[f.type] ?? 'string';
      const short = f.typeName.slice(f.typeName.lastIndexOf('.') + 1);
      return {
        name: f.name,
        jsonName: jsonNameOf(f.name),
        kind,
        repeated: f.label === 'LABEL_REPEATED',
        messageType: kind === 'message' ? shortToFull.get(short) : undefined,
        enumInfo: kind === 'enum' ? enums.get(short) : undefined,
      };
    });
    const byInputName = new Map<string, FieldSpec>();
    for (const f of fields) {
      byInputName.set(f.jsonName, f);
      byInputName.set(f.name, f);
    }
    out.set(fullName, { fields, byInputName });
  }
  cached = out;
  return out;
}

function spec(typeName: string): MessageSpec {
  const s = schema().get(typeName);
  if (s === undefined) throw new Error(`etcdsim: no message type ${typeName}`);
  return s;
}

/** A JSON value the gateway parsed (see parseJsonValue: big integer literals arrive as strings). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

/** A request the gateway could not read as the method's message: grpc-gateway answers 400 with code 3. */
export class JsonRequestError extends Error {}

/**
 * A parsed JSON request body → the service's message form of `typeName`: fields renamed to their proto
 * names, unknown fields dropped, nested messages mapped the same way. Refuses a value of the wrong JSON
 * type for its field, as jsonpb does (with a message of its own: Go's texts are not reproduced).
 */
export function messageFromJson(typeName: string, v: JsonValue): Record<string, unknown> {
  if (v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw new JsonRequestError(`json: cannot unmarshal ${jsonTypeName(v)} into Go value of type map[string]json.RawMessage`);
  const s = spec(typeName);
  const out: Record<string, unknown> = {};
  for (const [k, raw] of Object.entries(v)) {
    const f = s.byInputName.get(k);
    if (f === undefined || raw === null) continue;
    if (f.repeated) {
      if (!Array.isArray(raw)) throw new JsonRequestError(`json: cannot unmarshal ${jsonTypeName(raw)} into Go value of type []json.RawMessage`);
      out[f.name] = raw.map((x) => fieldFromJson(f, x));
    } else {
      out[f.name] = fieldFromJson(f, raw);
    }
  }
  return out;
}

function fieldFromJson(f: FieldSpec, v: JsonValue): unknown {
  switch (f.kind) {
    case 'message':
      return messageFromJson(f.messageType ?? '', v);
    case 'bytes': {
      if (typeof v !== 'string') throw new JsonRequestError(`json: cannot unmarshal ${jsonTypeName(v)} into Go value of type []uint8`);
      const bad = base64Error(v);
      if (bad !== undefined) throw new JsonRequestError(`illegal base64 data at input byte ${bad}`);
      return v;
    }
    case 'string':
      if (typeof v !== 'string') throw new JsonRequestError(`json: cannot unmarshal ${jsonTypeName(v)} into Go value of type string`);
      return v;
    case 'bool':
      if (typeof v !== 'boolean') throw new JsonRequestError(`json: cannot unmarshal ${jsonTypeName(v)} into Go value of type bool`);
      return v;
    case 'int64':
    case 'int32':
      if (typeof v === 'number' || (typeof v === 'string' && /^-?\d+$/.test(v))) return v;
      // jsonpb unquotes a string and reads what is inside as a JSON number.
      if (typeof v === 'string') throw new JsonRequestError(innerNumberError(v, f.kind));
      throw new JsonRequestError(`json: cannot unmarshal ${jsonTypeName(v)} into Go value of type ${f.kind}`);
    case 'enum':
      if (typeof v === 'number') return v;
      if (typeof v === 'string') {
        if (f.enumInfo !== undefined && !f.enumInfo.names.has(v)) throw new JsonRequestError(`unknown value ${goString(v)} for enum ${f.enumInfo.goName}`);
        return v;
      }
      throw new JsonRequestError(`json: cannot unmarshal ${jsonTypeName(v)} into Go value of type int32`);
  }
}

/** What Go's decoder says of the text inside a quoted integer that is not one. */
function innerNumberError(inner: string, kind: 'int64' | 'int32'): string {
  const r = readJsonValue(inner, 0);
  if ('error' in r) return r.error;
  if ('incomplete' in r) return 'unexpected end of JSON input';
  const rest = inner.slice(r.end).trimStart();
  if (rest !== '') return `invalid character ${rest[0] === "'" ? "'\\''" : `'${rest[0]}'`} after top-level value`;
  return `json: cannot unmarshal ${jsonTypeName(r.value)}${typeof r.value === 'number' ? ` ${inner.trim()}` : ''} into Go value of type ${kind}`;
}

/**
 * Where Go's base64.StdEncoding (what encoding/json decodes bytes with) fails on `s`: the input byte of
 * its CorruptInputError, or undefined when `s` decodes (padding required; \r and \n skipped).
 */
export function base64Error(s: string): number | undefined {
  const valid = (c: string): boolean => /[A-Za-z0-9+/]/.test(c);
  const skip = (c: string | undefined): boolean => c === '\r' || c === '\n';
  let si = 0;
  const n = s.length;
  for (;;) {
    let j = 0;
    for (; j < 4; j++) {
      while (si < n && skip(s[si])) si++;
      if (si === n) {
        if (j === 0) return undefined;
        return si - j;
      }
      const c = s[si++]!;
      if (valid(c)) continue;
      if (c !== '=') return si - 1;
      // Padding: only in the last two places of a quantum, and nothing but newlines after it.
      if (j === 0 || j === 1) return si - 1;
      if (j === 2) {
        while (si < n && skip(s[si])) si++;
        if (si === n) return n;
        if (s[si] !== '=') return si - 1;
        si++;
      }
      while (si < n && skip(s[si])) si++;
      if (si < n) return si;
      return undefined;
    }
  }
}

function jsonTypeName(v: JsonValue): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v === 'object' ? 'object' : typeof v;
}

/** A message-form response of `typeName` → the JSON text the gateway writes for it. */
export function messageToJson(typeName: string, msg: unknown): string {
  let out = '';
  const writeMessage = (t: string, m: Record<string, unknown>): void => {
    out += '{';
    let first = true;
    for (const f of spec(t).fields) {
      const v = m[f.name];
      if (v === undefined || v === null) continue;
      if (f.repeated) {
        if (!Array.isArray(v) || v.length === 0) continue;
        out += `${first ? '' : ','}${goString(f.name)}:[`;
        first = false;
        v.forEach((x, i) => {
          if (i > 0) out += ',';
          writeValue(f, x);
        });
        out += ']';
        continue;
      }
      if (isDefault(f, v)) continue;
      out += `${first ? '' : ','}${goString(f.name)}:`;
      first = false;
      writeValue(f, v);
    }
    out += '}';
  };
  const writeValue = (f: FieldSpec, v: unknown): void => {
    switch (f.kind) {
      case 'message':
        writeMessage(f.messageType ?? '', (v ?? {}) as Record<string, unknown>);
        return;
      case 'bytes':
        out += `"${Buffer.from(v as Uint8Array).toString('base64')}"`;
        return;
      case 'int64':
        out += `"${String(v)}"`;
        return;
      case 'int32':
        out += String(Number(v));
        return;
      case 'bool':
        out += v === true ? 'true' : 'false';
        return;
      case 'enum':
      case 'string':
        out += goString(String(v));
        return;
    }
  };
  writeMessage(typeName, (msg ?? {}) as Record<string, unknown>);
  return out;
}

function isDefault(f: FieldSpec, v: unknown): boolean {
  switch (f.kind) {
    case 'message':
      return false;
    case 'bytes':
      return (v as Uint8Array).byteLength === 0;
    case 'int64':
    case 'int32':
      return String(v) === '0';
    case 'bool':
      return v !== true;
    case 'enum':
      return v === f.enumInfo?.zero || v === 0;
    case 'string':
      return v === '';
  }
}

/** A string as Go's encoding/json writes it (HTML-safe escapes, \u00XX for control characters). */
export function goString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (c < 0x20 || ch === '<' || ch === '>' || ch === '&' || c === 0x2028 || c === 0x2029) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else if (c >= 0xd800 && c <= 0xdfff) out += '\\ufffd'; // a lone surrogate: Go writes U+FFFD for invalid UTF-8
    else out += ch;
  }
  return `${out}"`;
}

// ---------------------------------------------------------------------------------------------------
// Reading a body: one JSON value after another, as Go's json.Decoder reads them.

/** One JSON value cut from a body, or why it could not be: Go's text for the first syntax error. */
export type JsonRead = { readonly value: JsonValue; readonly end: number } | { readonly error: string } | { readonly incomplete: true };

/**
 * Reads the JSON value starting at `from` (after whitespace) in `text`, as Go's json.Decoder does: the
 * first complete value, whatever follows it. Integer literals of more than 15 digits arrive as strings, so
 * a 64-bit ID written as a number keeps every digit (every integer field takes a decimal string too).
 * `incomplete` when the text ends inside the value (a stream reads on); at the end of the text with only
 * whitespace left, also `incomplete`.
 */
export function readJsonValue(text: string, from: number): JsonRead {
  let i = from;
  const n = text.length;
  const ws = (): void => {
    while (i < n && (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')) i++;
  };
  let out = '';
  // The scanner's state: a stack of containers, and what it looks for next (Go's words for its errors).
  const stack: Array<'{' | '['> = [];
  let expect: 'value' | 'key' | 'firstKey' | 'firstValue' | 'colon' | 'afterKeyValue' | 'afterElement' = 'value';
  const quote = (c: string): string => (c === "'" ? "'\\''" : `'${c}'`);
  ws();
  if (i >= n) return { incomplete: true };
  for (;;) {
    ws();
    if (i >= n) return { incomplete: true };
    const c = text[i]!;
    if (expect === 'colon') {
      if (c !== ':') return { error: `invalid character ${quote(c)} after object key` };
      out += ':';
      i++;
      expect = 'value';
      continue;
    }
    if (expect === 'afterKeyValue' || expect === 'afterElement') {
      const top = stack[stack.length - 1];
      if (c === ',') {
        out += ',';
        i++;
        expect = top === '{' ? 'key' : 'value';
        continue;
      }
      if ((top === '{' && c === '}') || (top === '[' && c === ']')) {
        out += c;
        i++;
        stack.pop();
      } else {
        return { error: `invalid character ${quote(c)} after ${top === '{' ? 'object key:value pair' : 'array element'}` };
      }
    } else if (expect === 'key' || expect === 'firstKey') {
      if (c === '}' && expect === 'firstKey') {
        out += '}';
        i++;
        stack.pop();
      } else if (c === '"') {
        const s = scanString();
        if (s === undefined) return { incomplete: true };
        if (typeof s !== 'string') return s;
        out += s;
        expect = 'colon';
        continue;
      } else {
        return { error: `invalid character ${quote(c)} looking for beginning of object key string` };
      }
    } else {
      // A value.
      if (c === ']' && expect === 'firstValue') {
        out += ']';
        i++;
        stack.pop();
      } else if (c === '{' || c === '[') {
        stack.push(c);
        out += c;
        i++;
        expect = c === '{' ? 'firstKey' : 'firstValue';
        continue;
      } else if (c === '"') {
        const s = scanString();
        if (s === undefined) return { incomplete: true };
        if (typeof s !== 'string') return s;
        out += s;
      } else if (c === '-' || (c >= '0' && c <= '9')) {
        const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
        if (m === null) return { error: `invalid character ${quote(text[i + 1] ?? ' ')} in numeric literal` };
        if (i + m[0].length >= n && stack.length > 0) return { incomplete: true };
        const lit = m[0];
        i += lit.length;
        out += m[2] === undefined && m[3] === undefined && lit.replace('-', '').length > 15 ? `"${lit}"` : lit;
      } else {
        const word = ['true', 'false', 'null'].find((w) => w[0] === c);
        if (word === undefined) return { error: `invalid character ${quote(c)} looking for beginning of value` };
        const got = text.slice(i, i + word.length);
        if (got.length < word.length && word.startsWith(got)) return { incomplete: true };
        for (let k = 0; k < word.length; k++) {
          if (got[k] !== word[k]) return { error: `invalid character ${quote(got[k] ?? ' ')} in literal ${word} (expecting ${quote(word[k]!)})` };
        }
        i += word.length;
        out += word;
      }
    }
    if (stack.length === 0) {
      return { value: JSON.parse(out) as JsonValue, end: i };
    }
    expect = stack[stack.length - 1] === '{' ? 'afterKeyValue' : 'afterElement';
  }

  function scanString(): string | { error: string } | undefined {
    let j = i + 1;
    while (j < n) {
      const ch = text[j]!;
      if (ch === '\\') {
        j += 2;
        continue;
      }
      if (ch === '"') {
        const lit = text.slice(i, j + 1);
        i = j + 1;
        try {
          JSON.parse(lit);
        } catch {
          return { error: 'invalid character in string literal' };
        }
        return lit;
      }
      if (ch.charCodeAt(0) < 0x20) return { error: 'invalid character ' + quote(ch) + ' in string literal' };
      j++;
    }
    return undefined;
  }
}
