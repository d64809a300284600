/**
 * etcd's answer to a unary call kept as the bytes etcd sent, and compared as bytes with the simulator's
 * answer in etcd's own encoding — the shadow's common case, a call both answer alike, without decoding
 * etcd's answer at all.
 *
 * etcd's Go encoder writes a message canonically: fields in field-number order, a scalar at its default
 * (0, false, empty) left out. src/grpc/codec.ts writes the simulator's Range, Put, DeleteRange and Txn
 * answers the same way, so two answers whose decoded forms agree have the same bytes — but for what etcd
 * leaves free in the header (cluster and member IDs, raft term: src/diff/normalise.ts), compared here as
 * the canonical comparison does (both set or both zero). Bytes that differ prove nothing either way (another
 * encoder's field order, a default written out): the caller then decodes etcd's answer and compares the
 * canonical forms as before, which also reports a divergence with both texts. So the byte comparison only
 * ever answers "the same" for answers the canonical one calls the same.
 *
 * Decoding etcd's answer (protobufjs' decode and toObject, its int64 fields through Long's toString) and the
 * comparison of the two decoded forms were most of the shadow's own CPU per serializable Range
 * (docs/performance.md, "The shadow's overhead").
 */
import { Buffer } from 'node:buffer';
import protobuf from 'protobufjs';

/** etcd's successful answer as its bytes; `ok`, the decoded message, is decoded once, when something reads it. */
export class WireAnswer {
  private decoded: unknown;
  private done = false;

  constructor(
    /** The message (a copy: not the socket chunk it came in, which a scenario log entry would keep alive). */
    readonly bytes: Buffer,
    private readonly decode: (b: Buffer) => unknown,
  ) {}

  get ok(): unknown {
    if (!this.done) {
      this.decoded = this.decode(this.bytes);
      this.done = true;
    }
    return this.decoded;
  }

  /** As an Outcome: the scenario log writes etcd's answer as `{ ok }`. */
  toJSON(): { ok: unknown } {
    return { ok: this.ok };
  }
}

/** ResponseHeader's fields (etcdserverpb): cluster_id 1, member_id 2, revision 3, raft_term 4. */
const REVISION = 3;
/** Field 1 (the header), length-delimited: every response etcd sends that has one starts with it. */
const HEADER_TAG = (1 << 3) | 2;

/** Where a message's header is, and where each of its four fields' values are (`[start, end)`; absent: zero). */
interface HeaderAt {
  /** Where the message's fields after the header begin. */
  readonly rest: number;
  readonly fields: ReadonlyArray<readonly [number, number] | undefined>;
}

/** The header of `msg` as positions; undefined when it does not start with one of four varint fields, each at most once. */
function headerAt(msg: Uint8Array): HeaderAt | undefined {
  if (msg.length < 2 || msg[0] !== HEADER_TAG) return undefined;
  try {
    const r = protobuf.Reader.create(msg);
    r.pos = 1;
    const len = r.uint32();
    const end = r.pos + len;
    if (end > msg.length) return undefined;
    const fields: Array<readonly [number, number] | undefined> = [];
    while (r.pos < end) {
      const tag = r.uint32();
      const field = tag >>> 3;
      if ((tag & 7) !== 0 || field < 1 || field > 4 || fields[field] !== undefined) return undefined;
      const start = r.pos;
      r.skipType(0);
      if (r.pos > end) return undefined;
      fields[field] = [start, r.pos];
    }
    return { rest: end, fields };
  } catch {
    return undefined;
  }
}

/** The header revision etcd answered at; undefined when the message has no header of the expected form. */
export function headerRevision(msg: Uint8Array): number | undefined {
  const h = headerAt(msg);
  if (h === undefined) return undefined;
  const at = h.fields[REVISION];
  if (at === undefined) return 0;
  const r = protobuf.Reader.create(msg);
  r.pos = at[0];
  const v = r.uint64() as unknown as { toNumber(): number } | number;
  return typeof v === 'number' ? v : v.toNumber();
}

/**
 * Whether the simulator's answer (`mine`, in etcd's encoding) and etcd's (`etcd`, as sent) are the same
 * message once what etcd leaves free in the header is set aside: the fields after the header byte for byte,
 * the header's revision byte for byte (unless `late`: a read the simulator answered at etcd's revision after
 * it had moved past it, whose header the canonical comparison sets to etcd's), and the cluster ID, member ID
 * and raft term each set on both or on neither. False: not known to be the same (decode and compare).
 */
export function sameWire(mine: Uint8Array, etcd: Uint8Array, late: boolean): boolean {
  const a = headerAt(mine);
  const b = headerAt(etcd);
  if (a === undefined || b === undefined) return false;
  if (mine.length - a.rest !== etcd.length - b.rest || Buffer.compare(mine.subarray(a.rest), etcd.subarray(b.rest)) !== 0) return false;
  for (let f = 1; f <= 4; f++) {
    const x = a.fields[f];
    const y = b.fields[f];
    if ((x === undefined) !== (y === undefined)) return false;
    if (f === REVISION && !late && x !== undefined && y !== undefined && Buffer.compare(mine.subarray(x[0], x[1]), etcd.subarray(y[0], y[1])) !== 0) return false;
  }
  return true;
}
