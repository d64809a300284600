/**
 * etcd 3.4 through 3.6 decode a request with the Unmarshal method gogo/protobuf generated for it
 * (etcdserverpb/rpc.pb.go; grpc-go's proto codec calls it directly; 3.7 decodes with protobuf-go instead,
 * protobuf_go_check.ts), and a malformed request is refused with that method's error:
 * `proto: wrong wireType = 0 for field Key`, `proto: RangeRequest: illegal tag 0 (wire type 0)`,
 * `unexpected EOF`, ... (observed on 3.4.23, docs/observed-etcd-3.4.23.md). protobuf.js, which decodes for
 * grpc-js, is more lenient (it reads a known field whatever its wire type) and says nothing etcd says, so
 * every request is first walked here, the way the generated code walks it, and refused with its error text.
 *
 * The walk is table-driven from our .proto descriptors (message and field names as gogo's generator spells
 * them: CamelCase of the proto name) and allocates nothing on the common path; it only checks structure:
 * values are decoded afterwards by protobuf.js, which accepts everything this walk accepts.
 *
 * Followed literally from the 3.4.23 generated code, including its quirks: a tag's field number is the
 * wire value >> 3 truncated to int32 (so a huge tag reads as field 0), `illegal tag` prints the whole wire
 * value, a varint may run 10 bytes (the 11th is `integer overflow`), unknown fields are skipped by skipRpc
 * (groups without depth tracking), and a packed repeated varint may run past its declared length. One
 * deliberate difference: a length so large that offset + length overflows int64 makes 3.4's code slice out
 * of range and panic (the process exits); here it is `negative length found during unmarshaling`, the
 * check later gogo versions (etcd 3.5, 3.6) added.
 */
import type { PackageDefinition } from '@grpc/proto-loader';

const ERR_EOF = 'unexpected EOF';
const ERR_OVERFLOW = 'proto: integer overflow';
const ERR_NEGATIVE_LENGTH = 'proto: negative length found during unmarshaling';

/**
 * How a known field is read: a varint, a length-delimited value (bytes, or a proto3 string, which
 * protobuf-go checks for UTF-8 and gogo does not), a nested message, fixed 8 / 4 bytes, or a packable
 * repeated varint.
 */
export enum Kind {
  Varint,
  Bytes,
  String,
  Message,
  Fixed64,
  Fixed32,
  PackedVarint,
}

/** One known field of a message table (shared with protobuf_go_check.ts). */
export interface FieldCheck {
  readonly kind: Kind;
  readonly goName: string;
  /** For messages: the nested table, resolved after every table exists. */
  message: MessageCheck | undefined;
}

/** The known fields of one message type, as both Go decoders look them up. */
export interface MessageCheck {
  readonly goName: string;
  /** Indexed by field number (sparse; numbers past the end are unknown fields). */
  readonly fields: Array<FieldCheck | undefined>;
}

/** Returns the Go error text gogo's generated Unmarshal would return for `buf`, or undefined when it decodes. */
export type GogoCheck = (buf: Uint8Array) => string | undefined;

/** protoc-gen-gogo's generator.CamelCase: `range_end` → `RangeEnd`, `ID` → `ID`, `peerURLs` → `PeerURLs`. */
export function goCamelCase(s: string): string {
  let t = '';
  let i = 0;
  if (s.startsWith('_')) {
    t += 'X';
    i++;
  }
  const lower = (c: string | undefined): boolean => c !== undefined && c >= 'a' && c <= 'z';
  for (; i < s.length; i++) {
    let c = s[i]!;
    if (c === '_' && lower(s[i + 1])) continue;
    if (c >= '0' && c <= '9') {
      t += c;
      continue;
    }
    if (lower(c)) c = c.toUpperCase();
    t += c;
    while (lower(s[i + 1])) t += s[++i]!;
  }
  return t;
}

interface DescriptorField {
  name: string;
  number: number;
  label: string;
  type: string;
  typeName: string;
}
interface DescriptorType {
  name: string;
  field: DescriptorField[];
  nestedType?: DescriptorType[];
}

const VARINT_TYPES = new Set(['TYPE_INT64', 'TYPE_UINT64', 'TYPE_INT32', 'TYPE_UINT32', 'TYPE_BOOL', 'TYPE_ENUM', 'TYPE_SINT32', 'TYPE_SINT64']);
const FIXED64_TYPES = new Set(['TYPE_FIXED64', 'TYPE_SFIXED64', 'TYPE_DOUBLE']);
const FIXED32_TYPES = new Set(['TYPE_FIXED32', 'TYPE_SFIXED32', 'TYPE_FLOAT']);

/**
 * Builds a checker for every message type of a proto-loader package definition (the request types are
 * looked up by their full name, e.g. `etcdserverpb.RangeRequest`).
 */
export function compileGogoChecks(pd: PackageDefinition): (fullName: string) => GogoCheck {
  const tables = compileMessageTables(pd);
  return (fullName) => {
    const table = tables.get(fullName);
    if (table === undefined) throw new Error(`gogo check: no message ${fullName}`);
    return (buf) => checkMessage(buf, 0, buf.length, table);
  };
}

/** The field tables of every message type of a proto-loader package definition, by full name. */
export function compileMessageTables(pd: PackageDefinition): ReadonlyMap<string, MessageCheck> {
  const tables = new Map<string, MessageCheck>();
  const pending: Array<{ field: FieldCheck; ref: string; scope: string }> = [];
  const addType = (fullName: string, goName: string, t: DescriptorType): void => {
    const fields: Array<FieldCheck | undefined> = [];
    for (const f of t.field) {
      const repeated = f.label === 'LABEL_REPEATED';
      let kind: Kind;
      if (f.type === 'TYPE_MESSAGE') kind = Kind.Message;
      else if (f.type === 'TYPE_BYTES') kind = Kind.Bytes;
      else if (f.type === 'TYPE_STRING') kind = Kind.String;
      else if (VARINT_TYPES.has(f.type)) kind = repeated ? Kind.PackedVarint : Kind.Varint;
      else if (FIXED64_TYPES.has(f.type)) kind = Kind.Fixed64;
      else if (FIXED32_TYPES.has(f.type)) kind = Kind.Fixed32;
      else throw new Error(`gogo check: unsupported field type ${f.type} in ${fullName}`);
      const field: FieldCheck = { kind, goName: goCamelCase(f.name), message: undefined };
      fields[f.number] = field;
      if (kind === Kind.Message) pending.push({ field, ref: f.typeName, scope: fullName });
    }
    tables.set(fullName, { goName, fields });
    for (const n of t.nestedType ?? []) addType(`${fullName}.${n.name}`, `${goName}_${n.name}`, n);
  };
  for (const [name, def] of Object.entries(pd)) {
    const d = def as { format?: string; type?: DescriptorType };
    if (d.format !== 'Protocol Buffer 3 DescriptorProto' || d.type === undefined) continue;
    addType(name, d.type.name, d.type);
  }
  // Type references are relative to the referring message's scope (protobuf's resolution: innermost first).
  for (const { field, ref, scope } of pending) {
    const name = ref.startsWith('.') ? ref.slice(1) : ref;
    let resolved: MessageCheck | undefined;
    for (let s = scope; resolved === undefined; ) {
      resolved = tables.get(s === '' ? name : `${s}.${name}`);
      if (s === '') break;
      const dot = s.lastIndexOf('.');
      s = dot < 0 ? '' : s.slice(0, dot);
    }
    if (resolved === undefined) throw new Error(`gogo check: cannot resolve ${ref} from ${scope}`);
    field.message = resolved;
  }
  return tables;
}

/** Position after a varint at `i` (end exclusive `l`), or an error: gogo's loop checks the shift before the end. */
function skipVarint(buf: Uint8Array, i: number, l: number): number | string {
  for (let shift = 0; ; shift += 7) {
    if (shift >= 64) return ERR_OVERFLOW;
    if (i >= l) return ERR_EOF;
    if (buf[i++]! < 0x80) return i;
  }
}

/** Scratch results of readLength / readTag (one call at a time; nothing is allocated per field). */
let varPos = 0;
let varNum = 0;
let varBig: bigint | undefined;

/**
 * Reads a varint as Go's int (64-bit two's complement) into varNum (exact while below 2^49) or, when
 * longer, varBig; varPos is the position after it. Returns an error text or undefined.
 */
function readVarint(buf: Uint8Array, i: number, l: number): string | undefined {
  let n = 0;
  let mul = 1;
  for (let shift = 0; ; shift += 7) {
    if (shift >= 64) return ERR_OVERFLOW;
    if (i >= l) return ERR_EOF;
    const b = buf[i++]!;
    if (shift >= 49) return readBigVarint(buf, i - 1 - shift / 7, l);
    n += (b & 0x7f) * mul;
    mul *= 128;
    if (b < 0x80) break;
  }
  varPos = i;
  varNum = n;
  varBig = undefined;
  return undefined;
}

function readBigVarint(buf: Uint8Array, start: number, l: number): string | undefined {
  let v = 0n;
  let i = start;
  for (let shift = 0n; ; shift += 7n) {
    if (shift >= 64n) return ERR_OVERFLOW;
    if (i >= l) return ERR_EOF;
    const b = buf[i++]!;
    v |= BigInt(b & 0x7f) << shift;
    if (b < 0x80) break;
  }
  varPos = i;
  const u = BigInt.asUintN(64, v);
  // A long encoding of a small value (valid protobuf, if unusual) is still that small value.
  varBig = u < 1n << 49n ? undefined : u;
  varNum = Number(u);
  return undefined;
}

/**
 * After readVarint of a length: the end of the value at varPos, or an error (Go: `int(x) < 0` is a negative
 * length; past the end is unexpected EOF; offset + length overflowing int64 — a panic in 3.4 — is a
 * negative length here).
 */
function lengthEnd(l: number): number | string {
  if (varBig === undefined) {
    const end = varPos + varNum;
    return end > l ? ERR_EOF : end;
  }
  const signed = BigInt.asIntN(64, varBig);
  if (signed < 0n) return ERR_NEGATIVE_LENGTH;
  if (BigInt(varPos) + signed >= 1n << 63n) return ERR_NEGATIVE_LENGTH;
  return ERR_EOF;
}

function checkMessage(buf: Uint8Array, start: number, l: number, m: MessageCheck): string | undefined {
  let i = start;
  while (i < l) {
    const pre = i;
    const e = readVarint(buf, i, l);
    if (e !== undefined) return e;
    i = varPos;
    let fieldNum: number;
    let wireType: number;
    let wire: string;
    if (varBig === undefined && varNum < 2 ** 34) {
      fieldNum = Math.floor(varNum / 8);
      wireType = varNum % 8;
      wire = String(varNum);
    } else {
      const w = varBig ?? BigInt(varNum);
      fieldNum = Number(BigInt.asIntN(32, w >> 3n));
      wireType = Number(w & 7n);
      wire = String(w);
    }
    if (wireType === 4) return `proto: ${m.goName}: wiretype end group for non-group`;
    if (fieldNum <= 0) return `proto: ${m.goName}: illegal tag ${fieldNum} (wire type ${wire})`;
    const f = m.fields[fieldNum];
    if (f === undefined) {
      const skippy = skipField(buf, pre, l);
      if (typeof skippy === 'string') return skippy;
      if (skippy < 0) return ERR_NEGATIVE_LENGTH;
      if (pre + skippy > l) return ERR_EOF;
      i = pre + skippy;
      continue;
    }
    switch (f.kind) {
      case Kind.Varint: {
        if (wireType !== 0) return `proto: wrong wireType = ${wireType} for field ${f.goName}`;
        const r = skipVarint(buf, i, l);
        if (typeof r === 'string') return r;
        i = r;
        break;
      }
      case Kind.Bytes:
      case Kind.String:
      case Kind.Message: {
        if (wireType !== 2) return `proto: wrong wireType = ${wireType} for field ${f.goName}`;
        const le = readVarint(buf, i, l);
        if (le !== undefined) return le;
        if (varBig !== undefined && BigInt.asIntN(64, varBig) < 0n) return ERR_NEGATIVE_LENGTH;
        const body = varPos;
        const end = lengthEnd(l);
        if (typeof end === 'string') return end;
        if (f.kind === Kind.Message) {
          const ne = checkMessage(buf, body, end, f.message!);
          if (ne !== undefined) return ne;
        }
        i = end;
        break;
      }
      case Kind.Fixed64:
      case Kind.Fixed32: {
        const size = f.kind === Kind.Fixed64 ? 8 : 4;
        if (wireType !== (size === 8 ? 1 : 5)) return `proto: wrong wireType = ${wireType} for field ${f.goName}`;
        if (i + size > l) return ERR_EOF;
        i += size;
        break;
      }
      case Kind.PackedVarint: {
        if (wireType === 0) {
          const r = skipVarint(buf, i, l);
          if (typeof r === 'string') return r;
          i = r;
        } else if (wireType === 2) {
          const le = readVarint(buf, i, l);
          if (le !== undefined) return le;
          if (varBig !== undefined && BigInt.asIntN(64, varBig) < 0n) return ERR_NEGATIVE_LENGTH;
          i = varPos;
          const end = lengthEnd(l);
          if (typeof end === 'string') return end;
          // As generated: the elements' varints are bounded by the message, not by the packed length.
          while (i < end) {
            const r = skipVarint(buf, i, l);
            if (typeof r === 'string') return r;
            i = r;
          }
        } else {
          return `proto: wrong wireType = ${wireType} for field ${f.goName}`;
        }
        break;
      }
    }
  }
  return i > l ? ERR_EOF : undefined;
}

/**
 * gogo's skipRpc (3.4.23's generation: groups are skipped by reading inner fields up to the first end-group
 * tag, without depth): the size of the unknown field at `start`, possibly past `l` or negative.
 */
function skipField(buf: Uint8Array, start: number, l: number): number | string {
  let i = start;
  while (i < l) {
    const e = readVarint(buf, i, l);
    if (e !== undefined) return e;
    i = varPos;
    const wireType = varBig === undefined ? varNum % 8 : Number(varBig & 7n);
    switch (wireType) {
      case 0: {
        const r = skipVarint(buf, i, l);
        return typeof r === 'string' ? r : r - start;
      }
      case 1:
        return i + 8 - start;
      case 2: {
        const le = readVarint(buf, i, l);
        if (le !== undefined) return le;
        if (varBig !== undefined) {
          const signed = BigInt.asIntN(64, varBig);
          if (signed < 0n) return ERR_NEGATIVE_LENGTH;
          // varPos + length overflowing int64 is negative in Go: the caller's `skippy < 0`.
          return BigInt(varPos) + signed >= 1n << 63n ? -1 : Number.MAX_SAFE_INTEGER;
        }
        return varPos + varNum - start;
      }
      case 3: {
        for (;;) {
          const inner = i;
          const ie = readVarint(buf, i, l);
          if (ie !== undefined) return ie;
          i = varPos;
          const innerType = varBig === undefined ? varNum % 8 : Number(varBig & 7n);
          if (innerType === 4) break;
          const next = skipField(buf, inner, l);
          if (typeof next === 'string') return next;
          i = inner + next;
        }
        return i - start;
      }
      case 4:
        return i - start;
      case 5:
        return i + 4 - start;
      default:
        return `proto: illegal wireType ${wireType}`;
    }
  }
  // Go's skipRpc ends in panic("unreachable") here; it is only reached with start >= l, which callers never pass.
  return ERR_EOF;
}
