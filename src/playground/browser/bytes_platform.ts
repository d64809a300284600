/**
 * The browser's stand-in for src/sim/bytes_platform.ts (Node's Buffer): the playground bundle resolves that
 * module to this one. It is a Uint8Array with the few Buffer operations the engine and the scenario runner
 * use — from (UTF-8, base64, latin1, arrays, views), alloc, allocUnsafe, concat, copy, toString and the
 * latin1Slice the index keys are made with — each giving the bytes and text Node's would.
 */
type Encoding = 'utf8' | 'utf-8' | 'base64' | 'latin1' | 'binary' | 'hex';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8');

function latin1Of(bytes: Uint8Array, start: number, end: number): string {
  let s = '';
  // Chunks keep String.fromCharCode's argument list well under engines' limits.
  for (let i = start; i < end; i += 8192) s += String.fromCharCode(...bytes.subarray(i, Math.min(end, i + 8192)));
  return s;
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

function base64Of(b: Uint8Array): string {
  let out = '';
  for (let i = 0; i < b.length; i += 3) {
    const n = (b[i]! << 16) | ((b[i + 1] ?? 0) << 8) | (b[i + 2] ?? 0);
    out += B64[(n >> 18) & 63]! + B64[(n >> 12) & 63]! + (i + 1 < b.length ? B64[(n >> 6) & 63]! : '=') + (i + 2 < b.length ? B64[n & 63]! : '=');
  }
  return out;
}

/** Node's base64 decoder is lenient: it reads the standard and URL alphabets, skips anything else, stops at '='. */
function bytesOfBase64(s: string): number[] {
  const out: number[] = [];
  let acc = 0;
  let bits = 0;
  for (const ch of s) {
    if (ch === '=') break;
    let v = B64.indexOf(ch);
    if (ch === '-') v = 62;
    else if (ch === '_') v = 63;
    if (v < 0) continue;
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push((acc >> bits) & 0xff);
    }
  }
  return out;
}

/** A Uint8Array with Buffer's encode/decode helpers (only those the simulator calls). */
export class Buffer extends Uint8Array {
  static override from(value: string, encoding?: Encoding): Buffer;
  static override from(value: ArrayBuffer, byteOffset?: number, length?: number): Buffer;
  static override from(value: ArrayLike<number> | Iterable<number>): Buffer;
  static override from(value: string | ArrayBuffer | ArrayLike<number> | Iterable<number>, arg2?: Encoding | number, arg3?: number): Buffer {
    if (typeof value === 'string') {
      const enc = (arg2 as Encoding | undefined) ?? 'utf8';
      if (enc === 'base64') return Buffer.from(bytesOfBase64(value));
      if (enc === 'latin1' || enc === 'binary') return Buffer.from(Array.from(value, (c) => c.charCodeAt(0) & 0xff));
      if (enc === 'hex') return Buffer.from((value.match(/[0-9a-fA-F]{2}/g) ?? []).map((h) => parseInt(h, 16)));
      const u = encoder.encode(value);
      return new Buffer(u.buffer, u.byteOffset, u.byteLength);
    }
    if (value instanceof ArrayBuffer) {
      // As Node's: a view of the same memory, not a copy.
      const off = (arg2 as number | undefined) ?? 0;
      return new Buffer(value, off, arg3 ?? value.byteLength - off);
    }
    // Arrays and typed arrays are copied, as Node's Buffer.from copies them.
    const src = value as ArrayLike<number> | Iterable<number>;
    const arr = Symbol.iterator in Object(src) ? Array.from(src as Iterable<number>) : Array.from(src as ArrayLike<number>);
    const b = new Buffer(arr.length);
    b.set(arr);
    return b;
  }

  static alloc(size: number): Buffer {
    return new Buffer(size);
  }

  static allocUnsafe(size: number): Buffer {
    return new Buffer(size);
  }

  static concat(list: readonly Uint8Array[], total?: number): Buffer {
    const n = total ?? list.reduce((a, b) => a + b.byteLength, 0);
    const out = new Buffer(n);
    let at = 0;
    for (const b of list) {
      if (at >= n) break;
      const part = b.subarray(0, n - at);
      out.set(part, at);
      at += part.byteLength;
    }
    return out;
  }

  /** Byte order (Go's bytes.Compare): -1, 0 or 1, a shorter prefix first. */
  static compare(a: Uint8Array, b: Uint8Array): -1 | 0 | 1 {
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
    return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
  }

  static isBuffer(v: unknown): v is Buffer {
    return v instanceof Buffer;
  }

  static byteLength(s: string): number {
    return encoder.encode(s).byteLength;
  }

  /** Copies into `target` at `targetStart` as much as fits; the count copied. */
  copy(target: Uint8Array, targetStart = 0, sourceStart = 0, sourceEnd: number = this.length): number {
    const part = this.subarray(sourceStart, Math.min(sourceEnd, sourceStart + target.length - targetStart));
    target.set(part, targetStart);
    return part.length;
  }

  latin1Slice(this: Uint8Array, start = 0, end: number = this.length): string {
    return latin1Of(this, start, end);
  }

  override toString(encoding: Encoding = 'utf8', start = 0, end: number = this.length): string {
    const view = this.subarray(start, end);
    switch (encoding) {
      case 'base64':
        return base64Of(view);
      case 'latin1':
      case 'binary':
        return latin1Of(view, 0, view.length);
      case 'hex':
        return Array.from(view, (x) => x.toString(16).padStart(2, '0')).join('');
      default:
        return decoder.decode(view);
    }
  }

  equals(other: Uint8Array): boolean {
    return this.length === other.length && this.every((v, i) => v === other[i]);
  }
}
