/**
 * Protocol Buffers wire encoding, as Go's protobuf writes etcd's messages: the one encoder behind both the
 * gRPC response codec (src/grpc/codec.ts, which builds on these primitives) and HashKV, which hashes each
 * revision's mvccpb.KeyValue exactly as etcd's backend stores it (hash_kv.ts). It lives in mvcc, the lowest
 * layer that needs it, so the layers above import it rather than keeping copies.
 *
 * Encoding is two passes: measure a message, then write it into one buffer of exactly that size.
 */
import { Buffer } from '../sim/bytes_platform.js';
import type { KeyValue } from './types.js';

/** Wire type of varint fields (int64, uint64, bool, enums). */
export const VARINT = 0;
/** Wire type of length-delimited fields (bytes, string, embedded messages). */
export const LEN = 2;

/** A field's key: its number and wire type. */
export const tag = (field: number, wire: number): number => (field << 3) | wire;

/**
 * An int64 as the unsigned 64-bit value its varint carries: protobuf writes a negative int64 in two's
 * complement, ten bytes long.
 */
export function int64Bits(v: number | bigint): number | bigint {
  if (typeof v === 'number') return v >= 0 ? v : BigInt.asUintN(64, BigInt(v));
  return v >= 0n && v <= 0xffffffffffffffffn ? v : BigInt.asUintN(64, v);
}

/** Bytes of the varint of an unsigned value (a non-negative safe integer or a uint64 bigint). */
export function varintSize(v: number | bigint): number {
  if (typeof v === 'number') {
    if (v < 0x80) return 1;
    if (v < 0x4000) return 2;
    if (v < 0x200000) return 3;
    if (v < 0x10000000) return 4;
    let n = 4;
    v = Math.floor(v / 0x10000000);
    while (v > 0) {
      n++;
      v = Math.floor(v / 0x80);
    }
    return n;
  }
  let n = 1;
  while (v >= 0x80n) {
    n++;
    v >>= 7n;
  }
  return n;
}

/** A byte cursor over an output buffer of a measured size. */
export class WireWriter {
  readonly buf: Buffer;
  pos = 0;
  /** `over`: write into that buffer itself (e.g. a snapshot file being laid out) instead of a new one of `size`. */
  constructor(size: number, over?: Buffer) {
    this.buf = over ?? Buffer.allocUnsafe(size);
  }
  /** An unsigned varint (see int64Bits for signed values). */
  varint(v: number | bigint): void {
    const b = this.buf;
    if (typeof v === 'number') {
      if (v < 0x80000000) {
        // Revisions, lengths, tags: 32-bit integer arithmetic, no float division.
        while (v >= 0x80) {
          b[this.pos++] = (v & 0x7f) | 0x80;
          v >>>= 7;
        }
        b[this.pos++] = v;
        return;
      }
      while (v >= 0x80) {
        b[this.pos++] = (v % 0x80) | 0x80;
        v = Math.floor(v / 0x80);
      }
      b[this.pos++] = v;
      return;
    }
    while (v >= 0x80n) {
      b[this.pos++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    b[this.pos++] = Number(v);
  }
  /** A length-delimited field: tag, length, then the bytes. */
  bytes(field: number, v: Uint8Array): void {
    this.varint(tag(field, LEN));
    this.varint(v.length);
    this.buf.set(v, this.pos);
    this.pos += v.length;
  }
}

/** Bytes of an int64 field, none at its default 0 (proto3 leaves defaults out). */
export function int64FieldSize(field: number, v: number | bigint): number {
  if (v === 0 || v === 0n) return 0;
  return varintSize(tag(field, VARINT)) + varintSize(int64Bits(v));
}
export function writeInt64Field(o: WireWriter, field: number, v: number | bigint): void {
  if (v === 0 || v === 0n) return;
  o.varint(tag(field, VARINT));
  o.varint(int64Bits(v));
}

/** Bytes of a bytes field, none when empty. */
export function bytesFieldSize(field: number, v: Uint8Array): number {
  return v.length === 0 ? 0 : varintSize(tag(field, LEN)) + varintSize(v.length) + v.length;
}
export function writeBytesField(o: WireWriter, field: number, v: Uint8Array): void {
  if (v.length !== 0) o.bytes(field, v);
}

/**
 * Bytes of mvccpb.KeyValue's fields (key 1, create_revision 2, mod_revision 3, version 4, value 5, lease 6), in
 * field order with defaults left out: the one layout of a KeyValue on the wire, for HashKV here and for
 * every response that carries KeyValues (src/grpc/codec.ts, which passes its int64 strings as numbers).
 */
export function keyValueSize(
  key: Uint8Array,
  createRevision: number | bigint,
  modRevision: number | bigint,
  version: number | bigint,
  value: Uint8Array,
  lease: number | bigint,
): number {
  return (
    bytesFieldSize(1, key) +
    int64FieldSize(2, createRevision) +
    int64FieldSize(3, modRevision) +
    int64FieldSize(4, version) +
    bytesFieldSize(5, value) +
    int64FieldSize(6, lease)
  );
}
/** Writes the fields keyValueSize measured. */
export function writeKeyValue(
  o: WireWriter,
  key: Uint8Array,
  createRevision: number | bigint,
  modRevision: number | bigint,
  version: number | bigint,
  value: Uint8Array,
  lease: number | bigint,
): void {
  writeBytesField(o, 1, key);
  writeInt64Field(o, 2, createRevision);
  writeInt64Field(o, 3, modRevision);
  writeInt64Field(o, 4, version);
  writeBytesField(o, 5, value);
  writeInt64Field(o, 6, lease);
}

const NO_BYTES = new Uint8Array(0);

/**
 * mvccpb.KeyValue of a revision as etcd's backend stores it (the value of its key bucket entry): every
 * field for a put; for a tombstone only the key, as etcd writes a delete.
 */
export function marshalKeyValue(kv: KeyValue, tombstone: boolean): Uint8Array {
  const o = tombstone
    ? new WireWriter(keyValueSize(kv.key, 0, 0, 0, NO_BYTES, 0))
    : new WireWriter(keyValueSize(kv.key, kv.createRevision, kv.modRevision, kv.version, kv.value, kv.lease));
  if (tombstone) writeKeyValue(o, kv.key, 0, 0, 0, NO_BYTES, 0);
  else writeKeyValue(o, kv.key, kv.createRevision, kv.modRevision, kv.version, kv.value, kv.lease);
  return o.buf;
}
