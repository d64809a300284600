/**
 * HPACK (RFC 7541), the header compression of HTTP/2, as a gRPC server needs it: a full decoder (static
 * and dynamic table, dynamic table size updates, Huffman strings) for what clients send — grpc-go indexes
 * every request header, so after a connection's first call a request's HEADERS block is a few bytes of
 * table references — and an encoder that never touches the peer's dynamic table: static-table indices and
 * literals without indexing, optionally Huffman-coded. Replies of a gRPC server repeat a handful of
 * constant blocks, so the encoder can also encode a block once (`HpackEncoder.constant`) for reuse on
 * every stream.
 *
 * Header names and values are octet strings; here they are JavaScript strings of latin1 characters (one
 * char per octet), as node:http2 hands them over.
 */

/** A decoding or encoding error: on a connection this is a connection error of type COMPRESSION_ERROR. */
export class HpackError extends Error {}

/** The static table, RFC 7541 Appendix A: entry i (1..61) is STATIC_TABLE[i - 1] as [name, value]. */
export const STATIC_TABLE: ReadonlyArray<readonly [string, string]> = [
  [':authority', ''], [':method', 'GET'], [':method', 'POST'], [':path', '/'], [':path', '/index.html'],
  [':scheme', 'http'], [':scheme', 'https'], [':status', '200'], [':status', '204'], [':status', '206'],
  [':status', '304'], [':status', '400'], [':status', '404'], [':status', '500'], ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'], ['accept-language', ''], ['accept-ranges', ''], ['accept', ''],
  ['access-control-allow-origin', ''], ['age', ''], ['allow', ''], ['authorization', ''], ['cache-control', ''],
  ['content-disposition', ''], ['content-encoding', ''], ['content-language', ''], ['content-length', ''],
  ['content-location', ''], ['content-range', ''], ['content-type', ''], ['cookie', ''], ['date', ''],
  ['etag', ''], ['expect', ''], ['expires', ''], ['from', ''], ['host', ''], ['if-match', ''],
  ['if-modified-since', ''], ['if-none-match', ''], ['if-range', ''], ['if-unmodified-since', ''],
  ['last-modified', ''], ['link', ''], ['location', ''], ['max-forwards', ''], ['proxy-authenticate', ''],
  ['proxy-authorization', ''], ['range', ''], ['referer', ''], ['refresh', ''], ['retry-after', ''],
  ['server', ''], ['set-cookie', ''], ['strict-transport-security', ''], ['transfer-encoding', ''],
  ['user-agent', ''], ['vary', ''], ['via', ''], ['www-authenticate', ''],
];
const STATIC_COUNT = STATIC_TABLE.length;

/** Every entry costs its name and value octets plus 32 (RFC 7541 §4.1). */
const ENTRY_OVERHEAD = 32;

/** Scratch entries a decoder keeps between blocks (fields × 2): 128 KB of pointers at most. */
const SCRATCH_KEEP = 16 * 1024;
const EMPTY_FIELD = '';

// ---------------------------------------------------------------------------------------------------
// Huffman code (RFC 7541 Appendix B).

/**
 * Bit length of the Huffman code of each symbol 0..255 and EOS (256). The code is canonical — codes of
 * one length are consecutive in symbol order, shorter lengths first — so these lengths define it fully
 * (checked against the RFC's examples in test/h2/hpack.test.ts).
 */
const HUFFMAN_BITS: readonly number[] = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
  30,
];
const MAX_CODE_BITS = 30;
const EOS = 256;

// Canonical decoding tables: per length L, the first code of that length, how many codes have it, and
// where its symbols start in the (length, symbol) order. Encoding table: each symbol's code.
const firstCode = new Array<number>(MAX_CODE_BITS + 1).fill(0);
const countOf = new Array<number>(MAX_CODE_BITS + 1).fill(0);
const startOf = new Array<number>(MAX_CODE_BITS + 1).fill(0);
const symbolsInOrder: number[] = HUFFMAN_BITS.map((_, s) => s).sort((a, b) => HUFFMAN_BITS[a]! - HUFFMAN_BITS[b]! || a - b);
const codeOf = new Array<number>(HUFFMAN_BITS.length).fill(0);
for (const n of HUFFMAN_BITS) countOf[n]!++;
for (let len = 1, code = 0, start = 0; len <= MAX_CODE_BITS; len++) {
  firstCode[len] = code;
  startOf[len] = start;
  for (let k = 0; k < countOf[len]!; k++) codeOf[symbolsInOrder[start + k]!] = code + k;
  code = (code + countOf[len]!) * 2;
  start += countOf[len]!;
}

/**
 * Decodes the Huffman-coded octets buf[start, end) into a latin1 string. Checks what RFC 7541 §5.2 makes
 * an error: the EOS symbol inside the string, and padding longer than 7 bits or not all ones.
 */
export function huffmanDecode(buf: Uint8Array, start: number, end: number): string {
  let out = '';
  let code = 0;
  let len = 0;
  for (let i = start; i < end; i++) {
    const byte = buf[i]!;
    for (let bit = 7; bit >= 0; bit--) {
      code = code * 2 + ((byte >> bit) & 1);
      len++;
      const k = code - firstCode[len]!;
      if (k < countOf[len]!) {
        const sym = symbolsInOrder[startOf[len]! + k]!;
        if (sym === EOS) throw new HpackError('EOS symbol in a Huffman-coded string');
        out += String.fromCharCode(sym);
        code = 0;
        len = 0;
      } else if (len === MAX_CODE_BITS) throw new HpackError('invalid Huffman code');
    }
  }
  if (len > 7 || code !== 2 ** len - 1) throw new HpackError('invalid Huffman padding');
  return out;
}

/** Octets of `s` (latin1) once Huffman-coded. */
export function huffmanLength(s: string): number {
  let bits = 0;
  for (let i = 0; i < s.length; i++) bits += HUFFMAN_BITS[s.charCodeAt(i) & 0xff]!;
  return (bits + 7) >> 3;
}

/** Writes `s` (latin1) Huffman-coded at buf[at]; returns the position after it. Pads with ones (EOS's prefix). */
export function huffmanEncodeInto(s: string, buf: Uint8Array, at: number): number {
  let acc = 0; // pending bits, at most 7 + 30 — kept below 2^53 by draining whole bytes as they fill
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const sym = s.charCodeAt(i) & 0xff;
    const bits = HUFFMAN_BITS[sym]!;
    acc = acc * 2 ** bits + codeOf[sym]!;
    n += bits;
    while (n >= 8) {
      n -= 8;
      const byte = Math.floor(acc / 2 ** n);
      buf[at++] = byte;
      acc -= byte * 2 ** n;
    }
  }
  if (n > 0) buf[at++] = (acc << (8 - n)) | (0xff >> n);
  return at;
}

/** `s` (latin1) Huffman-coded. */
export function huffmanEncode(s: string): Buffer {
  const out = Buffer.allocUnsafe(huffmanLength(s));
  huffmanEncodeInto(s, out, 0);
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Decoder.

/**
 * One connection's HPACK decoder (RFC 7541 §3): the dynamic table and its size bound. The table is a ring
 * of names and values, newest at `head`, so adding and evicting cost no array shifting.
 */
export class HpackDecoder {
  /** The SETTINGS_HEADER_TABLE_SIZE we announced: a size update above it is an error. */
  private readonly limit: number;
  /** The current maximum size, as last set by the encoder's dynamic table size update. */
  private max: number;
  private size = 0;
  private names: string[] = new Array<string>(16);
  private values: string[] = new Array<string>(16);
  /** Ring position of the newest entry, and how many entries there are. */
  private head = 0;
  private count = 0;
  private pos = 0;
  /** Whether the string literal strBounds last read is Huffman-coded. */
  private strHuffman = false;
  /** Where decodeLimited gathers a block's fields (see there). */
  private scratch: string[] = [];

  constructor(tableSize = 4096) {
    this.limit = tableSize;
    this.max = tableSize;
  }

  /** Octets the dynamic table holds now (RFC 7541 §4.1). */
  get tableSize(): number {
    return this.size;
  }

  /** The dynamic table, newest first, as [name, value] pairs (for tests). */
  dynamicTable(): Array<[string, string]> {
    const out: Array<[string, string]> = [];
    for (let i = 0; i < this.count; i++) {
      const at = (this.head + i) & (this.names.length - 1);
      out.push([this.names[at]!, this.values[at]!]);
    }
    return out;
  }

  /**
   * Decodes one complete header block buf[start, end) into a flat list [name, value, name, value, ...],
   * updating the dynamic table. Throws HpackError on malformed input (the connection must then be closed
   * with COMPRESSION_ERROR: the table is no longer in step with the peer's).
   */
  decode(buf: Buffer, start: number, end: number): string[] {
    return this.decodeLimited(buf, start, end, Infinity)!;
  }

  /**
   * As decode(), but once the header list passes `maxListSize` (octets of names and values plus 32 per
   * field, SETTINGS_MAX_HEADER_LIST_SIZE's measure) the fields are no longer kept: the block is still
   * decoded to the end, so the dynamic table stays in step, and the result is undefined.
   *
   * A refused list costs no more than its table work: fields are gathered in a scratch list kept between
   * blocks (a 48 MB "HPACK bomb" of references to one 4 KB entry would otherwise grow a fresh array to the
   * limit per block, churning the young generation), and once over the limit an indexed field is only
   * checked, a literal without indexing only read past.
   */
  decodeLimited(buf: Buffer, start: number, end: number, maxListSize: number): string[] | undefined {
    const out = this.scratch;
    let n = 0;
    let listSize = 0;
    this.pos = start;
    let fieldSeen = false;
    try {
      while (this.pos < end) {
        const b = buf[this.pos]!;
        if (b & 0x80) {
          // Indexed header field (§6.1).
          let i: number;
          if (b !== 0xff) {
            i = b & 0x7f;
            this.pos++;
          } else i = this.int(buf, end, 7);
          fieldSeen = true;
          if (i === 0) throw new HpackError('index 0');
          let name: string;
          let value: string;
          if (i <= STATIC_COUNT) {
            const e = STATIC_TABLE[i - 1]!;
            name = e[0];
            value = e[1];
          } else {
            const at = this.slot(i);
            name = this.names[at]!;
            value = this.values[at]!;
          }
          if (listSize > maxListSize) continue; // refused already
          listSize += name.length + value.length + ENTRY_OVERHEAD;
          if (listSize <= maxListSize) {
            out[n++] = name;
            out[n++] = value;
          }
        } else if (b & 0x40) {
          // Literal with incremental indexing (§6.2.1).
          const i = this.int(buf, end, 6);
          const name = i === 0 ? this.str(buf, end) : this.nameAt(i);
          const value = this.str(buf, end);
          this.add(name, value);
          fieldSeen = true;
          if (listSize > maxListSize) continue;
          listSize += name.length + value.length + ENTRY_OVERHEAD;
          if (listSize <= maxListSize) {
            out[n++] = name;
            out[n++] = value;
          }
        } else if (b & 0x20) {
          // Dynamic table size update (§6.3): only at the start of a block (§4.2).
          if (fieldSeen) throw new HpackError('dynamic table size update after a header field');
          const m = this.int(buf, end, 5);
          if (m > this.limit) throw new HpackError(`dynamic table size update to ${m}, over the limit ${this.limit}`);
          this.max = m;
          this.evict();
        } else {
          // Literal without indexing (0000) or never indexed (0001), both with a 4-bit prefix (§6.2.2, §6.2.3).
          const i = this.int(buf, end, 4);
          fieldSeen = true;
          if (listSize > maxListSize) {
            // Refused already: only its strings' bounds (and Huffman validity) matter.
            if (i === 0) this.skipStr(buf, end);
            else this.nameAt(i);
            this.skipStr(buf, end);
            continue;
          }
          const name = i === 0 ? this.str(buf, end) : this.nameAt(i);
          const value = this.str(buf, end);
          listSize += name.length + value.length + ENTRY_OVERHEAD;
          if (listSize <= maxListSize) {
            out[n++] = name;
            out[n++] = value;
          }
        }
      }
      return listSize <= maxListSize ? out.slice(0, n) : undefined;
    } finally {
      // The scratch keeps its room, not the strings (a value may be large); a very large one is let go.
      if (out.length > SCRATCH_KEEP) this.scratch = [];
      else out.fill(EMPTY_FIELD, 0, n);
    }
  }

  /** Ring slot of dynamic-table index `i` (62 = newest). */
  private slot(i: number): number {
    const k = i - STATIC_COUNT - 1;
    if (k >= this.count) throw new HpackError(`no table entry ${i}`);
    return (this.head + k) & (this.names.length - 1);
  }

  private nameAt(i: number): string {
    return i <= STATIC_COUNT ? STATIC_TABLE[i - 1]![0] : this.names[this.slot(i)]!;
  }

  private add(name: string, value: string): void {
    const size = name.length + value.length + ENTRY_OVERHEAD;
    if (size > this.max) {
      // An entry larger than the table empties it and is not added (§4.4).
      this.count = 0;
      this.size = 0;
      return;
    }
    this.size += size;
    this.evict();
    if (this.count === this.names.length) this.grow();
    this.head = (this.head - 1) & (this.names.length - 1);
    this.names[this.head] = name;
    this.values[this.head] = value;
    this.count++;
  }

  /** Drops the oldest entries until the table fits its maximum (octets of an entry about to be added included). */
  private evict(): void {
    const mask = this.names.length - 1;
    while (this.size > this.max && this.count > 0) {
      const at = (this.head + this.count - 1) & mask;
      this.size -= this.names[at]!.length + this.values[at]!.length + ENTRY_OVERHEAD;
      this.count--;
    }
  }

  private grow(): void {
    const n = this.names.length;
    const names = new Array<string>(n * 2);
    const values = new Array<string>(n * 2);
    for (let i = 0; i < this.count; i++) {
      names[i] = this.names[(this.head + i) & (n - 1)]!;
      values[i] = this.values[(this.head + i) & (n - 1)]!;
    }
    this.names = names;
    this.values = values;
    this.head = 0;
  }

  /** An integer with an N-bit prefix (§5.1) at this.pos. */
  private int(buf: Buffer, end: number, prefixBits: number): number {
    const mask = (1 << prefixBits) - 1;
    let v = buf[this.pos++]! & mask;
    if (v < mask) return v;
    let shift = 0;
    for (;;) {
      if (this.pos >= end) throw new HpackError('truncated integer');
      const b = buf[this.pos++]!;
      v += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if ((b & 0x80) === 0) return v;
      if (shift > 28) throw new HpackError('integer too large');
    }
  }

  /** Moves past a string literal (§5.2) at this.pos, checking it as str() would without building it. */
  private skipStr(buf: Buffer, end: number): void {
    const start = this.strBounds(buf, end);
    if (this.strHuffman) huffmanDecode(buf, start, this.pos);
  }

  /** A string literal (§5.2) at this.pos. */
  private str(buf: Buffer, end: number): string {
    const start = this.strBounds(buf, end);
    return this.strHuffman ? huffmanDecode(buf, start, this.pos) : buf.toString('latin1', start, this.pos);
  }

  /** Reads a string literal's length and Huffman flag (strHuffman) and moves past it; returns where its octets start. */
  private strBounds(buf: Buffer, end: number): number {
    if (this.pos >= end) throw new HpackError('truncated string');
    this.strHuffman = (buf[this.pos]! & 0x80) !== 0;
    const n = this.int(buf, end, 7);
    const start = this.pos;
    if (start + n > end) throw new HpackError('truncated string');
    this.pos += n;
    return start;
  }
}

// ---------------------------------------------------------------------------------------------------
// Encoder.

/** A header block encoded once, sent as is on any stream of any connection (it references no dynamic table). */
export class EncodedHeaders {
  constructor(
    /** The block's octets. */
    readonly bytes: Buffer,
  ) {}
}

/** Headers to send: a flat list [name, value, name, value, ...] (names lower-case), or a block encoded once. */
export type OutgoingHeaders = readonly string[] | EncodedHeaders;

const staticExact = new Map<string, number>();
const staticName = new Map<string, number>();
STATIC_TABLE.forEach(([n, v], i) => {
  if (!staticExact.has(`${n}\0${v}`)) staticExact.set(`${n}\0${v}`, i + 1);
  if (!staticName.has(n)) staticName.set(n, i + 1);
});

/** Octets an integer takes with an N-bit prefix. */
function intLength(v: number, prefixBits: number): number {
  const mask = (1 << prefixBits) - 1;
  if (v < mask) return 1;
  let n = 2;
  for (v -= mask; v >= 128; v = Math.floor(v / 128)) n++;
  return n;
}

function writeInt(buf: Buffer, at: number, v: number, prefixBits: number, first: number): number {
  const mask = (1 << prefixBits) - 1;
  if (v < mask) {
    buf[at++] = first | v;
    return at;
  }
  buf[at++] = first | mask;
  for (v -= mask; v >= 128; v = Math.floor(v / 128)) buf[at++] = (v % 128) | 0x80;
  buf[at++] = v;
  return at;
}

/**
 * A connection's HPACK encoder. It never adds to the peer's dynamic table, so blocks it makes are valid on
 * any connection; the only per-connection state is a pending dynamic table size update, owed when the peer
 * lowers SETTINGS_HEADER_TABLE_SIZE below the 4096 octets an encoder may assume (RFC 7541 §4.2).
 */
export class HpackEncoder {
  /** Octets the peer's decoder may still assume we use; a size update owed when lowered. */
  private assumed = 4096;
  private owed: Buffer | undefined;

  constructor(
    /** Huffman-code literal strings when that is shorter (smaller frames, a little more CPU). */
    private readonly huffman = false,
  ) {}

  /** Encodes `headers` (flat name/value list) once, for reuse on any stream of any connection. */
  static constant(headers: readonly string[], huffman = false): EncodedHeaders {
    return new EncodedHeaders(new HpackEncoder(huffman).encode(headers));
  }

  /** The peer's SETTINGS_HEADER_TABLE_SIZE changed: below what it may assume we use, we owe it a size update to 0. */
  setPeerTableSize(size: number): void {
    if (size < this.assumed) {
      this.assumed = size;
      // We never index, so the table we use is empty whatever its bound: announce 0, the smallest.
      this.owed = Buffer.from([0x20]);
      this.assumed = 0;
    }
  }

  /** A size update owed to the peer, to put before the next header block (taken once). */
  takeSizeUpdate(): Buffer | undefined {
    const owed = this.owed;
    this.owed = undefined;
    return owed;
  }

  /** Encodes a flat [name, value, ...] list: static index when (name, value) is in the static table, else a literal without indexing. */
  encode(headers: readonly string[]): Buffer {
    let size = 0;
    for (let i = 0; i + 1 < headers.length; i += 2) size += this.fieldLength(headers[i]!, headers[i + 1]!);
    const out = Buffer.allocUnsafe(size);
    let at = 0;
    for (let i = 0; i + 1 < headers.length; i += 2) at = this.writeField(out, at, headers[i]!, headers[i + 1]!);
    return out;
  }

  private fieldLength(name: string, value: string): number {
    const exact = staticExact.get(`${name}\0${value}`);
    if (exact !== undefined) return intLength(exact, 7);
    const ni = staticName.get(name);
    return (ni === undefined ? 1 + this.strLength(name) : intLength(ni, 4)) + this.strLength(value);
  }

  private writeField(out: Buffer, at: number, name: string, value: string): number {
    const exact = staticExact.get(`${name}\0${value}`);
    if (exact !== undefined) return writeInt(out, at, exact, 7, 0x80);
    const ni = staticName.get(name);
    if (ni === undefined) {
      out[at++] = 0x00;
      at = this.writeStr(out, at, name);
    } else at = writeInt(out, at, ni, 4, 0x00);
    return this.writeStr(out, at, value);
  }

  private strLength(s: string): number {
    const n = this.huffman ? Math.min(huffmanLength(s), s.length) : s.length;
    return intLength(n, 7) + n;
  }

  private writeStr(out: Buffer, at: number, s: string): number {
    if (this.huffman) {
      const h = huffmanLength(s);
      if (h < s.length) {
        at = writeInt(out, at, h, 7, 0x80);
        return huffmanEncodeInto(s, out, at);
      }
    }
    at = writeInt(out, at, s.length, 7, 0x00);
    return at + out.write(s, at, 'latin1');
  }
}

/** The value of the first header `name` in a flat [name, value, ...] list, or undefined. */
export function headerValue(headers: readonly string[], name: string): string | undefined {
  for (let i = 0; i < headers.length; i += 2) if (headers[i] === name) return headers[i + 1];
  return undefined;
}
