/**
 * Just enough protobuf decoding to read the messages etcd keeps in its backend (mvccpb.KeyValue,
 * leasepb.Lease, authpb.User / Role / Permission): varint and length-delimited fields, unknown fields of
 * any wire type skipped, every length checked. Encoding goes through src/mvcc/wire.ts, the one encoder.
 */

/** A stored message that is not valid protobuf, with which one and what is wrong. */
export class ProtoFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtoFormatError';
  }
}

/** One decoded field: its number and either a varint (as bigint, two's complement bits) or bytes. */
export type ProtoField = { readonly field: number; readonly varint: bigint } | { readonly field: number; readonly bytes: Uint8Array };

/** Every field of a message, in wire order. `what` names the message in errors. */
export function decodeFields(b: Uint8Array, what: string): ProtoField[] {
  const out: ProtoField[] = [];
  let pos = 0;
  const varint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      if (pos >= b.length) throw new ProtoFormatError(`${what}: truncated varint`);
      const byte = b[pos++]!;
      v |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return v;
      shift += 7n;
      if (shift > 63n) throw new ProtoFormatError(`${what}: varint longer than 10 bytes`);
    }
  };
  while (pos < b.length) {
    const key = varint();
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (field === 0) throw new ProtoFormatError(`${what}: field number 0`);
    if (wire === 0) out.push({ field, varint: BigInt.asUintN(64, varint()) });
    else if (wire === 2) {
      const len = Number(varint());
      if (pos + len > b.length) throw new ProtoFormatError(`${what}: field ${field} runs past the message`);
      out.push({ field, bytes: b.subarray(pos, pos + len) });
      pos += len;
    } else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else throw new ProtoFormatError(`${what}: unsupported wire type ${wire} (field ${field})`);
    if (pos > b.length) throw new ProtoFormatError(`${what}: field ${field} runs past the message`);
  }
  return out;
}

/** An int64 field's value (two's complement bits back to a signed bigint). */
export const asInt64 = (v: bigint): bigint => BigInt.asIntN(64, v);

/** A varint field of a message that must be a safe non-negative integer (revisions, versions, TTLs). */
export function safeNumber(v: bigint, what: string): number {
  const n = asInt64(v);
  if (n < 0n || n > BigInt(Number.MAX_SAFE_INTEGER)) throw new ProtoFormatError(`${what}: ${n} is out of range`);
  return Number(n);
}
