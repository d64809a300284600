// A second floor for the served-path bench (bench/served.bench.ts): the same do-nothing gRPC server as
// bench/h2_floor_server.mjs — every call, whatever its path, answered with HEADERS (:status 200,
// content-type application/grpc), one constant message and trailers grpc-status 0 / empty grpc-message once
// the request side ends — but on a bare `net` server speaking just enough HTTP/2 itself instead of
// node:http2. It measures what an HTTP/2 layer of our own could cost per call at best: connection preface,
// SETTINGS (+ack), PING ack, GOAWAY, WINDOW_UPDATE on receive and send-window accounting, HEADERS +
// CONTINUATION through a full HPACK decoder (static and dynamic table, Huffman), DATA, RST_STREAM. Replies
// are HPACK-encoded once (static indices and literals without indexing) and reused; everything a socket
// read produces goes out in one socket.write. Not a production transport: no priorities, no server push,
// no stream-level send windows beyond the initial one (a reply must fit it), few protocol checks, no
// gRPC-level errors. listen(port, handler) also lets a bench answer calls with real work (see Connection).
// Usage: node bench/h2_raw_floor_server.mjs <port> → prints "h2 raw floor server on 127.0.0.1:PORT";
// with `--member <dir of compiled src/>` it serves a real member's Put and Range instead (memberHandler).
import * as net from 'node:net';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// ---------------------------------------------------------------------------------------------------
// HPACK (RFC 7541), decoding only.

/** The static table, RFC 7541 Appendix A (index 1..61). */
const STATIC = [
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

// The Huffman code of RFC 7541 Appendix B is canonical (codes of one length are consecutive, in symbol
// order, shorter codes first), so the bit length of each of the 257 symbols (256 = EOS) defines it.
const HUFFMAN_BITS = [
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

// Canonical decoding tables: per length L, the first code of that length, how many codes have it, and
// where its symbols start in the length-then-symbol order.
const MAX_BITS = 30;
const firstCode = new Array(MAX_BITS + 1).fill(0);
const countOf = new Array(MAX_BITS + 1).fill(0);
const startOf = new Array(MAX_BITS + 1).fill(0);
const bySymbolOrder = HUFFMAN_BITS.map((_, s) => s).sort((a, b) => HUFFMAN_BITS[a] - HUFFMAN_BITS[b] || a - b);
for (const n of HUFFMAN_BITS) countOf[n]++;
for (let len = 1, code = 0, start = 0; len <= MAX_BITS; len++) {
  firstCode[len] = code;
  startOf[len] = start;
  code = (code + countOf[len]) * 2;
  start += countOf[len];
}

/** Decodes a Huffman-coded string (latin1), checking the padding: at most 7 bits, all ones (EOS's prefix). */
function huffmanDecode(buf, pos, end) {
  let out = '';
  let code = 0;
  let len = 0;
  for (let i = pos; i < end; i++) {
    const byte = buf[i];
    for (let bit = 7; bit >= 0; bit--) {
      code = code * 2 + ((byte >> bit) & 1);
      len++;
      const k = code - firstCode[len];
      if (k < countOf[len]) {
        const sym = bySymbolOrder[startOf[len] + k];
        if (sym === 256) throw new HpackError('EOS in a Huffman string');
        out += String.fromCharCode(sym);
        code = 0;
        len = 0;
      } else if (len === MAX_BITS) throw new HpackError('bad Huffman code');
    }
  }
  if (len > 7 || code !== 2 ** len - 1) throw new HpackError('bad Huffman padding');
  return out;
}

class HpackError extends Error {}

/** One connection's HPACK decoder: the dynamic table (newest first) and its size bound. */
class HpackDecoder {
  constructor(maxSize) {
    this.settingsMax = maxSize; // SETTINGS_HEADER_TABLE_SIZE we announced
    this.max = maxSize;
    this.size = 0;
    this.table = [];
    this.pos = 0;
  }

  entry(index) {
    if (index >= 1 && index <= STATIC.length) return STATIC[index - 1];
    const e = this.table[index - STATIC.length - 1];
    if (index === 0 || e === undefined) throw new HpackError(`no table entry ${index}`);
    return e;
  }

  add(name, value) {
    const size = name.length + value.length + 32;
    this.table.unshift([name, value]);
    this.size += size;
    this.evict();
  }

  evict() {
    while (this.size > this.max) {
      const [n, v] = this.table.pop();
      this.size -= n.length + v.length + 32;
    }
  }

  int(buf, end, prefixBits) {
    const mask = (1 << prefixBits) - 1;
    let v = buf[this.pos++] & mask;
    if (v < mask) return v;
    let shift = 0;
    for (;;) {
      if (this.pos >= end) throw new HpackError('truncated integer');
      const b = buf[this.pos++];
      v += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if ((b & 0x80) === 0) return v;
      if (shift > 28) throw new HpackError('integer too large');
    }
  }

  str(buf, end) {
    if (this.pos >= end) throw new HpackError('truncated string');
    const huffman = (buf[this.pos] & 0x80) !== 0;
    const n = this.int(buf, end, 7);
    const start = this.pos;
    if (start + n > end) throw new HpackError('truncated string');
    this.pos += n;
    return huffman ? huffmanDecode(buf, start, start + n) : buf.toString('latin1', start, start + n);
  }

  /** Decodes one header block into a flat [name, value, name, value, ...] list. */
  decode(buf, pos, end) {
    const out = [];
    this.pos = pos;
    while (this.pos < end) {
      const b = buf[this.pos];
      if (b & 0x80) {
        const [n, v] = this.entry(this.int(buf, end, 7));
        out.push(n, v);
      } else if (b & 0x40) {
        const i = this.int(buf, end, 6);
        const name = i === 0 ? this.str(buf, end) : this.entry(i)[0];
        const value = this.str(buf, end);
        this.add(name, value);
        out.push(name, value);
      } else if (b & 0x20) {
        const m = this.int(buf, end, 5);
        if (m > this.settingsMax) throw new HpackError('table size update over the limit');
        this.max = m;
        this.evict();
      } else {
        // Literal without indexing (0000) or never indexed (0001): both 4-bit prefixes.
        const i = this.int(buf, end, 4);
        const name = i === 0 ? this.str(buf, end) : this.entry(i)[0];
        out.push(name, this.str(buf, end));
      }
    }
    return out;
  }
}

// ---------------------------------------------------------------------------------------------------
// HTTP/2 framing (RFC 9113).

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const T_DATA = 0x0, T_HEADERS = 0x1, T_PRIORITY = 0x2, T_RST_STREAM = 0x3, T_SETTINGS = 0x4, T_PUSH_PROMISE = 0x5, T_PING = 0x6, T_GOAWAY = 0x7, T_WINDOW_UPDATE = 0x8, T_CONTINUATION = 0x9;
const F_END_STREAM = 0x1, F_ACK = 0x1, F_END_HEADERS = 0x4, F_PADDED = 0x8, F_PRIORITY = 0x20;
const E_NO_ERROR = 0x0, E_PROTOCOL = 0x1, E_FLOW_CONTROL = 0x3, E_FRAME_SIZE = 0x6, E_COMPRESSION = 0x9;
const S_HEADER_TABLE_SIZE = 0x1, S_MAX_CONCURRENT_STREAMS = 0x3, S_INITIAL_WINDOW_SIZE = 0x4, S_MAX_FRAME_SIZE = 0x5;

/** Our receive windows: per stream (announced in SETTINGS) and per connection (raised by a WINDOW_UPDATE). */
const RECV_WINDOW = 1 << 20;
const MAX_FRAME = 16384;
const HEADER_TABLE = 4096;
/** A peer's header block larger than this is refused (grpc-go's default limit is 16 MiB; ours is a floor). */
const MAX_HEADER_BLOCK = 1 << 20;

function frameHead(len, type, flags, stream) {
  const h = Buffer.allocUnsafe(9);
  h.writeUIntBE(len, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return h;
}

function frame(type, flags, stream, payload) {
  return Buffer.concat([frameHead(payload.length, type, flags, stream), payload]);
}

function u32(n) {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(n >>> 0, 0);
  return b;
}

function settingsPayload(pairs) {
  const b = Buffer.allocUnsafe(6 * pairs.length);
  pairs.forEach(([id, v], i) => {
    b.writeUInt16BE(id, 6 * i);
    b.writeUInt32BE(v >>> 0, 6 * i + 2);
  });
  return b;
}

/** What we send first: SETTINGS, then the connection window raised to RECV_WINDOW. */
const SERVER_PREFACE = Buffer.concat([
  frame(T_SETTINGS, 0, 0, settingsPayload([[S_MAX_CONCURRENT_STREAMS, 1000], [S_INITIAL_WINDOW_SIZE, RECV_WINDOW], [S_MAX_FRAME_SIZE, MAX_FRAME], [S_HEADER_TABLE_SIZE, HEADER_TABLE]])),
  frame(T_WINDOW_UPDATE, 0, 0, u32(RECV_WINDOW - 65535)),
]);
const SETTINGS_ACK = frame(T_SETTINGS, F_ACK, 0, Buffer.alloc(0));

// The reply, HPACK-encoded once. Response HEADERS: :status 200 (static 8, indexed), content-type
// (static name 31, literal value without indexing). Trailers: grpc-status and grpc-message as literals
// without indexing with new names.
function literalNewName(name, value) {
  return Buffer.concat([Buffer.from([0x00, name.length]), Buffer.from(name, 'latin1'), Buffer.from([value.length]), Buffer.from(value, 'latin1')]);
}
const RESPONSE_BLOCK = Buffer.concat([Buffer.from([0x88, 0x0f, 0x10, 16]), Buffer.from('application/grpc', 'latin1')]);
const TRAILER_BLOCK = Buffer.concat([literalNewName('grpc-status', '0'), literalNewName('grpc-message', '')]);
// ResponseHeader{cluster_id: 1, member_id: 2, revision: 3, raft_term: 4} as field 1 (as h2_floor_server.mjs).
const MESSAGE = Buffer.from('0a080801100218032004', 'hex');
const GRPC_FRAME = Buffer.concat([Buffer.from([0, 0, 0, 0, MESSAGE.length]), MESSAGE]);

/**
 * The whole reply to one stream as a single buffer: HEADERS, DATA, HEADERS(END_STREAM). Built from a
 * template with the stream id written in three places.
 */
const REPLY_TEMPLATE = Buffer.concat([
  frame(T_HEADERS, F_END_HEADERS, 0, RESPONSE_BLOCK),
  frame(T_DATA, 0, 0, GRPC_FRAME),
  frame(T_HEADERS, F_END_HEADERS | F_END_STREAM, 0, TRAILER_BLOCK),
]);
const ID_AT = [5, 9 + RESPONSE_BLOCK.length + 5, 9 + RESPONSE_BLOCK.length + 9 + GRPC_FRAME.length + 5];

/** The reply to one stream carrying `framed` (a gRPC-framed message) in DATA frames of at most MAX_FRAME bytes. */
function replyOf(stream, framed) {
  if (framed === GRPC_FRAME) {
    const r = Buffer.from(REPLY_TEMPLATE);
    for (const at of ID_AT) r.writeUInt32BE(stream, at);
    return r;
  }
  const parts = [frameHead(RESPONSE_BLOCK.length, T_HEADERS, F_END_HEADERS, stream), RESPONSE_BLOCK];
  for (let i = 0; i < framed.length; i += MAX_FRAME) {
    const chunk = framed.subarray(i, Math.min(framed.length, i + MAX_FRAME));
    parts.push(frameHead(chunk.length, T_DATA, 0, stream), chunk);
  }
  parts.push(frameHead(TRAILER_BLOCK.length, T_HEADERS, F_END_HEADERS | F_END_STREAM, stream), TRAILER_BLOCK);
  return Buffer.concat(parts);
}

class ConnectionError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/**
 * One client connection: framing state, HPACK decoder, streams, flow-control counters. With a `handler`
 * (path, headers as a flat name/value list, request message) → framed response or a promise of one, each
 * call's request message is collected and answered by it; without, every call gets the constant message.
 */
class Connection {
  constructor(socket, handler) {
    this.socket = socket;
    this.handler = handler;
    this.buf = Buffer.alloc(0);
    this.prefaceSeen = false;
    this.hpack = new HpackDecoder(HEADER_TABLE);
    /** Open streams (request side not yet ended): id → { recv: bytes since our last stream WINDOW_UPDATE, path, headers, parts }. */
    this.streams = new Map();
    this.lastStream = 0;
    /** Stream whose header block is still being continued (CONTINUATION), and its fragments. */
    this.contStream = 0;
    this.contFlags = 0;
    this.contParts = [];
    this.contBytes = 0;
    /** Connection-level receive bytes not yet given back with a WINDOW_UPDATE. */
    this.recvUnacked = 0;
    /** Our send windows: the connection's, and the initial window the peer gave each new stream. */
    this.sendWindow = 65535;
    this.peerInitialWindow = 65535;
    /** Replies waiting for connection send window. */
    this.pending = [];
    this.out = [];
    this.closed = false;
    socket.setNoDelay(true);
    socket.on('data', (chunk) => this.onData(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      connections.delete(this);
    });
    socket.write(SERVER_PREFACE);
  }

  onData(chunk) {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    try {
      this.parse();
    } catch (e) {
      const code = e instanceof ConnectionError ? e.code : e instanceof HpackError ? E_COMPRESSION : E_PROTOCOL;
      this.goaway(code, String(e.message));
      return;
    }
    this.flush();
  }

  parse() {
    let buf = this.buf;
    let p = 0;
    if (!this.prefaceSeen) {
      if (buf.length < PREFACE.length) return;
      if (!buf.subarray(0, PREFACE.length).equals(PREFACE)) throw new ConnectionError(E_PROTOCOL, 'bad connection preface');
      this.prefaceSeen = true;
      p = PREFACE.length;
    }
    while (buf.length - p >= 9) {
      const len = (buf[p] << 16) | (buf[p + 1] << 8) | buf[p + 2];
      if (len > MAX_FRAME) throw new ConnectionError(E_FRAME_SIZE, 'frame over SETTINGS_MAX_FRAME_SIZE');
      if (buf.length - p < 9 + len) break;
      const type = buf[p + 3];
      const flags = buf[p + 4];
      const stream = buf.readUInt32BE(p + 5) & 0x7fffffff;
      this.onFrame(type, flags, stream, buf, p + 9, p + 9 + len);
      p += 9 + len;
    }
    this.buf = p === buf.length ? Buffer.alloc(0) : buf.subarray(p);
  }

  onFrame(type, flags, stream, buf, start, end) {
    if (this.contStream !== 0 && type !== T_CONTINUATION) throw new ConnectionError(E_PROTOCOL, 'expected CONTINUATION');
    switch (type) {
      case T_DATA: {
        if (stream === 0) throw new ConnectionError(E_PROTOCOL, 'DATA on stream 0');
        const n = end - start; // flow control counts the whole payload, padding included
        this.recvUnacked += n;
        if (this.recvUnacked > RECV_WINDOW) throw new ConnectionError(E_FLOW_CONTROL, 'connection window exceeded');
        if (this.recvUnacked >= RECV_WINDOW / 2) {
          this.out.push(frame(T_WINDOW_UPDATE, 0, 0, u32(this.recvUnacked)));
          this.recvUnacked = 0;
        }
        const st = this.streams.get(stream);
        if (st === undefined) {
          // A closed or unknown stream: the bytes still count for the connection (above); tell the peer.
          if (stream > this.lastStream) throw new ConnectionError(E_PROTOCOL, 'DATA on an idle stream');
          this.out.push(frame(T_RST_STREAM, 0, stream, u32(0x5 /* STREAM_CLOSED */)));
          return;
        }
        // Without a handler the request message is not looked at (as in h2_floor_server.mjs).
        if (st.parts !== null) {
          let s = start;
          let e = end;
          if (flags & F_PADDED) {
            e -= buf[s++];
            if (e < s) throw new ConnectionError(E_PROTOCOL, 'padding longer than the frame');
          }
          // The chunk is a view of this read's buffer, which a later read may replace, not change.
          if (e > s) st.parts.push(buf.subarray(s, e));
        }
        if (flags & F_END_STREAM) {
          this.streams.delete(stream);
          this.answer(stream, st);
        } else if (st.recv + n >= RECV_WINDOW / 2) {
          this.out.push(frame(T_WINDOW_UPDATE, 0, stream, u32(st.recv + n)));
          st.recv = 0;
        } else st.recv += n;
        return;
      }
      case T_HEADERS: {
        if (stream === 0 || (stream & 1) === 0) throw new ConnectionError(E_PROTOCOL, 'HEADERS on a bad stream id');
        let s = start;
        let e = end;
        if (flags & F_PADDED) {
          const pad = buf[s++];
          e -= pad;
          if (e < s) throw new ConnectionError(E_PROTOCOL, 'padding longer than the frame');
        }
        if (flags & F_PRIORITY) s += 5;
        if (flags & F_END_HEADERS) this.onHeaderBlock(stream, flags, buf, s, e);
        else {
          this.contStream = stream;
          this.contFlags = flags;
          this.contParts = [buf.subarray(s, e)];
          this.contBytes = e - s;
        }
        return;
      }
      case T_CONTINUATION: {
        if (stream !== this.contStream || stream === 0) throw new ConnectionError(E_PROTOCOL, 'unexpected CONTINUATION');
        this.contParts.push(buf.subarray(start, end));
        this.contBytes += end - start;
        if (this.contBytes > MAX_HEADER_BLOCK) throw new ConnectionError(E_PROTOCOL, 'header block too large');
        if (flags & F_END_HEADERS) {
          const block = Buffer.concat(this.contParts);
          this.contStream = 0;
          this.contParts = [];
          this.onHeaderBlock(stream, this.contFlags, block, 0, block.length);
        }
        return;
      }
      case T_PRIORITY:
        return;
      case T_RST_STREAM:
        this.streams.delete(stream);
        return;
      case T_SETTINGS: {
        if (stream !== 0) throw new ConnectionError(E_PROTOCOL, 'SETTINGS on a stream');
        if (flags & F_ACK) return;
        if ((end - start) % 6 !== 0) throw new ConnectionError(E_FRAME_SIZE, 'SETTINGS length');
        for (let i = start; i < end; i += 6) {
          const id = buf.readUInt16BE(i);
          const v = buf.readUInt32BE(i + 2);
          if (id === S_INITIAL_WINDOW_SIZE) {
            if (v > 0x7fffffff) throw new ConnectionError(E_FLOW_CONTROL, 'initial window too large');
            this.peerInitialWindow = v;
          }
          // HEADER_TABLE_SIZE would bound our encoder's table: we send no indexed entries of our own.
        }
        this.out.push(SETTINGS_ACK);
        return;
      }
      case T_PING:
        if (end - start !== 8) throw new ConnectionError(E_FRAME_SIZE, 'PING length');
        if ((flags & F_ACK) === 0) this.out.push(frame(T_PING, F_ACK, 0, buf.subarray(start, end)));
        return;
      case T_GOAWAY:
        this.streams.clear();
        this.socket.end();
        return;
      case T_WINDOW_UPDATE: {
        if (end - start !== 4) throw new ConnectionError(E_FRAME_SIZE, 'WINDOW_UPDATE length');
        if (stream === 0) {
          this.sendWindow += buf.readUInt32BE(start) & 0x7fffffff;
          this.drainPending();
        }
        // Stream windows: a reply is the only DATA on its stream and fits the initial window (see reply).
        return;
      }
      case T_PUSH_PROMISE:
        throw new ConnectionError(E_PROTOCOL, 'PUSH_PROMISE from a client');
      default:
        return; // unknown frame types are ignored
    }
  }

  onHeaderBlock(stream, flags, buf, start, end) {
    const headers = this.hpack.decode(buf, start, end);
    if (stream <= this.lastStream) throw new ConnectionError(E_PROTOCOL, 'stream id not increasing');
    this.lastStream = stream;
    // What a server would route on; the floor answers every path alike.
    let path = '';
    for (let i = 0; i < headers.length; i += 2) if (headers[i] === ':path') path = headers[i + 1];
    if (path === '') {
      this.out.push(frame(T_RST_STREAM, 0, stream, u32(E_PROTOCOL)));
      return;
    }
    const st = { recv: 0, path, headers, parts: this.handler === undefined ? null : [] };
    if (flags & F_END_STREAM) this.answer(stream, st);
    else this.streams.set(stream, st);
  }

  /** Answers a call whose request side ended: the constant message, or the handler's answer. */
  answer(stream, st) {
    if (st.parts === null) {
      this.reply(stream, GRPC_FRAME);
      return;
    }
    const body = st.parts.length === 1 ? st.parts[0] : Buffer.concat(st.parts);
    if (body.length < 5 || body.readUInt32BE(1) !== body.length - 5) {
      this.out.push(frame(T_RST_STREAM, 0, stream, u32(E_PROTOCOL))); // not one whole gRPC message: a floor's shortcut
      return;
    }
    const res = this.handler(st.path, st.headers, body.subarray(5));
    if (typeof res.then !== 'function') this.reply(stream, res);
    else
      res.then(
        (framed) => {
          if (this.closed) return;
          this.reply(stream, framed);
          this.flush();
        },
        () => {
          if (this.closed) return;
          this.out.push(frame(T_RST_STREAM, 0, stream, u32(0x2 /* INTERNAL_ERROR */)));
          this.flush();
        },
      );
  }

  /** Queues the reply to `stream`; its DATA waits while the connection's send window is short. */
  reply(stream, framed) {
    const n = framed.length;
    if (n > this.peerInitialWindow) throw new ConnectionError(E_FLOW_CONTROL, 'peer stream window too small for a reply');
    const r = replyOf(stream, framed);
    if (this.pending.length === 0 && this.sendWindow >= n) {
      this.sendWindow -= n;
      this.out.push(r);
    } else this.pending.push({ r, n });
  }

  drainPending() {
    let i = 0;
    while (i < this.pending.length && this.sendWindow >= this.pending[i].n) {
      this.sendWindow -= this.pending[i].n;
      this.out.push(this.pending[i++].r);
    }
    if (i > 0) this.pending.splice(0, i);
  }

  flush() {
    if (this.out.length === 0 || this.closed) return;
    this.socket.write(this.out.length === 1 ? this.out[0] : Buffer.concat(this.out));
    this.out = [];
  }

  goaway(code, message) {
    if (this.closed) return;
    this.closed = true;
    const debug = Buffer.from(message ?? '', 'utf8');
    this.out.push(frame(T_GOAWAY, 0, 0, Buffer.concat([u32(this.lastStream), u32(code), debug])));
    this.socket.end(Buffer.concat(this.out));
    this.out = [];
  }
}

const connections = new Set();

/** Listens on 127.0.0.1:`port` (0: any free port), answering calls with `handler` if given (see Connection); resolves with the port. */
export function listen(port, handler) {
  const server = net.createServer((socket) => connections.add(new Connection(socket, handler)));
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve({ server, port: server.address().port })));
}

/**
 * The prototype behind `--member <dir>`: a served member (serve() from src/ compiled into <dir>, as the
 * served bench compiles it; its own node:http2 port stays idle) whose KV Put and Range calls come through
 * this layer — decoded by the same deserializer with gogo's checks, run by the same service functions,
 * answered by the same framed encoders as the thin unary path. No token, deadline or wire-error handling:
 * what the member's work adds to the raw floor, not a server.
 */
async function memberHandler(folder) {
  const dir = pathToFileURL(resolve(folder)).href;
  const { serve, etcdService, PROTO_LOADER_OPTIONS } = await import(`${dir}/src/grpc/server.js`);
  const { withRequestChecks, MalformedRequest } = await import(`${dir}/src/grpc/request_checks.js`);
  const { requestDecodingOf, requestChecks } = await import(`${dir}/src/grpc/request_decoding.js`);
  const { framedEncoders } = await import(`${dir}/src/grpc/codec.js`);
  const protoLoader = await import('@grpc/proto-loader');
  const handle = await serve({ port: 0, etcdVersion: '3.4' });
  const member = handle.server;
  const pd = protoLoader.loadSync('etcdserverpb/rpc.proto', PROTO_LOADER_OPTIONS);
  const kv = withRequestChecks(etcdService('KV').service, requestChecks(pd, 'etcdserverpb', requestDecodingOf('3.4', undefined)));
  const methods = new Map([
    ['/etcdserverpb.KV/Put', { decode: kv.Put.requestDeserialize, run: (r, c) => member.services.kv.put(r, c), encode: framedEncoders.put }],
    ['/etcdserverpb.KV/Range', { decode: kv.Range.requestDeserialize, run: (r, c) => member.services.kv.range(r, c), encode: framedEncoders.range }],
  ]);
  return (path, _headers, message) => {
    const m = methods.get(path);
    if (m === undefined) throw new ConnectionError(E_PROTOCOL, `prototype: no method ${path}`);
    const req = m.decode(message);
    if (req instanceof MalformedRequest) throw new ConnectionError(E_PROTOCOL, req.error);
    const ctx = {};
    if (member.tokenWaitIndex(ctx) !== undefined) throw new ConnectionError(E_PROTOCOL, 'prototype: no token waits');
    const res = m.run(req, ctx);
    return typeof res?.then === 'function' ? res.then(m.encode) : m.encode(res);
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const withMember = process.argv[3] === '--member' && process.argv[4] !== undefined;
  const { server, port } = await listen(Number(process.argv[2] ?? '0'), withMember ? await memberHandler(process.argv[4]) : undefined);
  process.stdout.write(`h2 raw ${withMember ? 'member' : 'floor'} server on 127.0.0.1:${port}\n`);
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      // GOAWAY to every client, then exit once the sockets are gone (or after a moment).
      for (const c of connections) c.goaway(E_NO_ERROR, '');
      server.close(() => process.exit(0));
      setTimeout(() => process.exit(0), 500).unref();
    });
  }
}

export { HpackDecoder, HpackError, huffmanDecode, HUFFMAN_BITS };
