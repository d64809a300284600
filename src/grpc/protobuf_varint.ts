/**
 * protobuf.js (which decodes requests for grpc-js) reads a 32-bit varint — every tag, every length, every
 * enum, bool and int32 — by taking five bytes and then skipping five more unseen: right for the minimal
 * encodings and for a negative int32's ten bytes, wrong for a varint of six to nine bytes. Such encodings
 * are valid protobuf, and etcd's decoder (gogo, like every Go decoder) reads up to ten bytes and keeps the
 * low 32 bits. With protobuf.js's reading, a Put whose key tag takes six bytes was stored under another key.
 * So the reader is replaced, once, by one that reads the whole varint and keeps its low 32 bits.
 * (Requests reach protobuf.js only after gogo_check.ts accepted them: every varint here ends in the buffer.)
 * Imported, not required by path, so that a bundle (dist/etcd.cjs) patches the protobuf.js it decodes with.
 */
import protobuf from 'protobufjs';

interface ProtobufReader {
  buf: Uint8Array;
  pos: number;
  len: number;
}

let installed = false;

/** Makes protobuf.js read 32-bit varints of any valid length (idempotent). */
export function installVarintFix(): void {
  if (installed) return;
  installed = true;
  const reader = protobuf.Reader.prototype as unknown as { uint32(this: ProtobufReader): number };
  reader.uint32 = function uint32(this: ProtobufReader): number {
    const buf = this.buf;
    let value = 0;
    for (let shift = 0; shift < 70; shift += 7) {
      if (this.pos >= this.len) throw new RangeError(`index out of range: ${this.pos} + 1 > ${this.len}`);
      const b = buf[this.pos++]!;
      if (shift < 32) value |= (b & 0x7f) << shift;
      if (b < 0x80) return value >>> 0;
    }
    throw new RangeError('invalid varint encoding');
  };
}
