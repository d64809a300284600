/**
 * HPACK (src/h2/hpack.ts) against RFC 7541 Appendix C: the request examples without (C.3) and with
 * (C.4) Huffman coding, the response examples (C.5, C.6) on a 256-octet table with evictions — each
 * decoded in sequence on one decoder, checking the header lists, the dynamic table and its size — plus
 * the encoder: its blocks decode back to what was encoded, Huffman strings match the RFC's, and
 * malformed input is refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HpackDecoder, HpackEncoder, HpackError, huffmanDecode, huffmanEncode } from '../../src/h2/hpack.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

interface Step {
  readonly block: string;
  readonly headers: string[];
  /** Dynamic table after the block, newest first. */
  readonly table: Array<[string, string]>;
  readonly size: number;
}

function decodeAll(decoder: HpackDecoder, steps: readonly Step[]): void {
  for (const [i, s] of steps.entries()) {
    const b = hex(s.block);
    assert.deepEqual(decoder.decode(b, 0, b.length), s.headers, `block ${i + 1}`);
    assert.deepEqual(decoder.dynamicTable(), s.table, `table after block ${i + 1}`);
    assert.equal(decoder.tableSize, s.size, `table size after block ${i + 1}`);
  }
}

const REQ1 = [':method', 'GET', ':scheme', 'http', ':path', '/', ':authority', 'www.example.com'];
const REQ2 = [...REQ1, 'cache-control', 'no-cache'];
const REQ3 = [':method', 'GET', ':scheme', 'https', ':path', '/index.html', ':authority', 'www.example.com', 'custom-key', 'custom-value'];
const REQ_TABLES: Array<Array<[string, string]>> = [
  [[':authority', 'www.example.com']],
  [['cache-control', 'no-cache'], [':authority', 'www.example.com']],
  [['custom-key', 'custom-value'], ['cache-control', 'no-cache'], [':authority', 'www.example.com']],
];

test('C.3: requests without Huffman coding, one decoder', () => {
  decodeAll(new HpackDecoder(), [
    { block: '8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d', headers: REQ1, table: REQ_TABLES[0]!, size: 57 },
    { block: '8286 84be 5808 6e6f 2d63 6163 6865', headers: REQ2, table: REQ_TABLES[1]!, size: 110 },
    { block: '8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65', headers: REQ3, table: REQ_TABLES[2]!, size: 164 },
  ]);
});

test('C.4: requests with Huffman coding, one decoder', () => {
  decodeAll(new HpackDecoder(), [
    { block: '8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff', headers: REQ1, table: REQ_TABLES[0]!, size: 57 },
    { block: '8286 84be 5886 a8eb 1064 9cbf', headers: REQ2, table: REQ_TABLES[1]!, size: 110 },
    { block: '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf', headers: REQ3, table: REQ_TABLES[2]!, size: 164 },
  ]);
});

const DATE1 = 'Mon, 21 Oct 2013 20:13:21 GMT';
const DATE2 = 'Mon, 21 Oct 2013 20:13:22 GMT';
const LOC = 'https://www.example.com';
const COOKIE = 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1';
const RES1 = [':status', '302', 'cache-control', 'private', 'date', DATE1, 'location', LOC];
const RES2 = [':status', '307', 'cache-control', 'private', 'date', DATE1, 'location', LOC];
const RES3 = [':status', '200', 'cache-control', 'private', 'date', DATE2, 'location', LOC, 'content-encoding', 'gzip', 'set-cookie', COOKIE];
const RES_TABLES: Array<Array<[string, string]>> = [
  [['location', LOC], ['date', DATE1], ['cache-control', 'private'], [':status', '302']],
  [[':status', '307'], ['location', LOC], ['date', DATE1], ['cache-control', 'private']],
  [['set-cookie', COOKIE], ['content-encoding', 'gzip'], ['date', DATE2]],
];

test('C.5: responses without Huffman coding, 256-octet table with evictions', () => {
  decodeAll(new HpackDecoder(256), [
    {
      block:
        '4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d',
      headers: RES1,
      table: RES_TABLES[0]!,
      size: 222,
    },
    { block: '4803 3330 37c1 c0bf', headers: RES2, table: RES_TABLES[1]!, size: 222 },
    {
      block:
        '88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31',
      headers: RES3,
      table: RES_TABLES[2]!,
      size: 215,
    },
  ]);
});

test('C.6: responses with Huffman coding, 256-octet table with evictions', () => {
  decodeAll(new HpackDecoder(256), [
    {
      block: '4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3',
      headers: RES1,
      table: RES_TABLES[0]!,
      size: 222,
    },
    { block: '4883 640e ffc1 c0bf', headers: RES2, table: RES_TABLES[1]!, size: 222 },
    {
      block:
        '88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07',
      headers: RES3,
      table: RES_TABLES[2]!,
      size: 215,
    },
  ]);
});

test('Huffman: the RFC strings encode to its octets and back', () => {
  const cases: Array<[string, string]> = [
    ['www.example.com', 'f1e3 c2e5 f23a 6ba0 ab90 f4ff'],
    ['no-cache', 'a8eb 1064 9cbf'],
    ['custom-key', '25a8 49e9 5ba9 7d7f'],
    ['custom-value', '25a8 49e9 5bb8 e8b4 bf'],
    ['302', '6402'],
    ['private', 'aec3 771a 4b'],
    [DATE1, 'd07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff'],
    [LOC, '9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3'],
  ];
  for (const [s, h] of cases) {
    assert.equal(huffmanEncode(s).toString('hex'), hex(h).toString('hex'), s);
    const b = hex(h);
    assert.equal(huffmanDecode(b, 0, b.length), s);
  }
  // Every octet value round-trips.
  const all = Array.from({ length: 256 }, (_, i) => String.fromCharCode(i)).join('');
  const enc = huffmanEncode(all);
  assert.equal(huffmanDecode(enc, 0, enc.length), all);
});

test('encoder: the C.3 requests and C.5 responses round-trip, with and without Huffman', () => {
  for (const huffman of [false, true]) {
    const enc = new HpackEncoder(huffman);
    const dec = new HpackDecoder(256);
    for (const h of [REQ1, REQ2, REQ3, RES1, RES2, RES3, ['grpc-status', '0', 'grpc-message', ''], [':status', '200', 'content-type', 'application/grpc']]) {
      const block = enc.encode(h);
      assert.deepEqual(dec.decode(block, 0, block.length), h);
      // Nothing is indexed: the peer's table stays empty.
      assert.equal(dec.tableSize, 0);
    }
  }
  // Static-table hits are one octet; a static name with a literal value uses the name's index.
  assert.equal(new HpackEncoder().encode([':status', '200']).toString('hex'), '88');
  assert.equal(new HpackEncoder().encode(['content-type', 'application/grpc']).toString('hex'), '0f1010' + Buffer.from('application/grpc').toString('hex'));
  const constant = HpackEncoder.constant([':status', '200', 'content-type', 'application/grpc']);
  assert.equal(constant.bytes.toString('hex'), '880f1010' + Buffer.from('application/grpc').toString('hex'));
});

test('encoder: a lowered SETTINGS_HEADER_TABLE_SIZE owes one size update', () => {
  const enc = new HpackEncoder();
  enc.setPeerTableSize(4096);
  assert.equal(enc.takeSizeUpdate(), undefined);
  enc.setPeerTableSize(0);
  assert.equal(enc.takeSizeUpdate()?.toString('hex'), '20');
  assert.equal(enc.takeSizeUpdate(), undefined);
  const dec = new HpackDecoder(0);
  const b = Buffer.concat([hex('20'), enc.encode(REQ1)]);
  assert.deepEqual(dec.decode(b, 0, b.length), REQ1);
});

test('decoder: malformed blocks are refused', () => {
  const bad = [
    '80', // index 0
    'be', // dynamic index 62 on an empty table
    '41', // literal with a truncated value
    '0f', // truncated integer
    '3fe21f', // size update to 4097, over the 4096 limit
    '82 20', // size update after a header field
    '00 81 ff', // a Huffman string of all ones: padding longer than 7 bits
    '0085 ffff ffff ff', // EOS inside a string
  ];
  for (const h of bad) {
    const b = hex(h);
    assert.throws(() => new HpackDecoder().decode(b, 0, b.length), HpackError, h);
  }
  // A size update at the start of a block is fine, and evicts.
  const d = new HpackDecoder();
  const b1 = hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572');
  assert.deepEqual(d.decode(b1, 0, b1.length), ['custom-key', 'custom-header']);
  assert.equal(d.tableSize, 55);
  const b2 = hex('20 82');
  assert.deepEqual(d.decode(b2, 0, b2.length), [':method', 'GET']);
  assert.equal(d.tableSize, 0);
});

test('a header list over the limit: the rest of the block still updates the table and is still checked; the next block starts clean', () => {
  const d = new HpackDecoder();
  const lit = (name: string, value: string, first: number): Buffer => Buffer.concat([Buffer.from([first, name.length]), Buffer.from(name), Buffer.from([value.length]), Buffer.from(value)]);
  // 3 references to a 100-octet field: 3 × 138 octets, over a limit of 300 on the third.
  const big = lit('x-big', 'v'.repeat(100), 0x40);
  const over = Buffer.concat([Buffer.from([0x83]), big, Buffer.from([0xbe, 0xbe, 0xbe]), lit('x-plain', 'p', 0x00), lit('x-added', 'a', 0x40), Buffer.from([0xbf])]);
  assert.equal(d.decodeLimited(over, 0, over.length, 300), undefined);
  assert.deepEqual(
    d.dynamicTable().map(([n]) => n),
    ['x-added', 'x-big'],
    'an indexed literal past the limit still enters the table',
  );
  // Nothing of the refused block leaks into the next one.
  const next = Buffer.from([0x82, 0xbe]);
  assert.deepEqual(d.decodeLimited(next, 0, next.length, 300), [':method', 'GET', 'x-added', 'a']);
  // Past the limit a reference to no entry, a bad Huffman string or a truncated literal is still an error.
  for (const tail of [Buffer.from([0xc5]), Buffer.from([0x00, 0x01, 0x61, 0x81, 0xff]), Buffer.from([0x00, 0x05, 0x61])]) {
    const block = Buffer.concat([Buffer.from([0xbe, 0xbe, 0xbe]), tail]);
    assert.throws(() => new HpackDecoder().decodeLimited(Buffer.concat([big, block]), 0, big.length + block.length, 300), HpackError);
  }
});
