/**
 * Maintenance.Snapshot's responses on the wire: each SnapshotResponse as a gRPC message written straight
 * from the snapshot file's bytes.
 *
 * A response is `header` (field 1; etcd's Snapshot sends none), `remaining_bytes` (field 2, a varint),
 * `blob` (field 3: 32 KiB of the bbolt file, or its SHA-256 at the end) and, from etcd 3.6 on, `version`
 * (field 4, the storage version) — canonical proto3 in field order with defaults left out, as etcd's Go
 * encoder writes it (proto-loader's encoder wrote `remaining_bytes: 0` out, 2 bytes etcd does not send).
 * The blob is a view of the one snapshot file (MaintenanceService.snapshot): the gRPC door
 * (snapshotResponseFrames) hands it to the socket as it is, after a small buffer holding the gRPC prefix
 * and the field heads, so a snapshot is not copied per message (protobufjs copied each blob into a message
 * object and again into its encoding).
 */
import { Buffer } from 'node:buffer';
import type * as M from '../server/messages.js';
import { LEN, tag, VARINT, varintSize, WireWriter } from '../mvcc/index.js';

/** A uint64 in message form (a decimal string) as the value its varint carries. */
function uint64(s: string): number | bigint {
  return s.length < 16 ? Number(s) : BigInt(s);
}

const isZero = (v: number | bigint): boolean => v === 0 || v === 0n;
const uint64FieldSize = (v: number | bigint): number => (isZero(v) ? 0 : 1 + varintSize(v));

function writeUint64Field(o: WireWriter, field: number, v: number | bigint): void {
  if (isZero(v)) return;
  o.varint(tag(field, VARINT));
  o.varint(v);
}

/** ResponseHeader's four uint64 fields, as numbers or bigints. */
function headerValues(h: M.ResponseHeader): [number | bigint, number | bigint, number | bigint, number | bigint] {
  return [uint64(h.cluster_id), uint64(h.member_id), uint64(h.revision), uint64(h.raft_term)];
}

/**
 * One SnapshotResponse as the buffers of its gRPC message frame, in order: the 5-byte prefix with the
 * fields before the blob and the blob's head, the blob itself (not copied), then the version field when
 * there is one.
 */
export function snapshotResponseFrames(r: M.SnapshotResponse): Buffer[] {
  const header = r.header === null ? undefined : headerValues(r.header);
  const headerSize = header === undefined ? 0 : header.reduce<number>((n, v) => n + uint64FieldSize(v), 0);
  const headerFieldSize = header === undefined ? 0 : 1 + varintSize(headerSize) + headerSize;
  const remaining = uint64(r.remaining_bytes);
  const blob = r.blob;
  const version = r.version === undefined || r.version === '' ? undefined : Buffer.from(r.version, 'utf8');
  const blobHeadSize = blob.length === 0 ? 0 : 1 + varintSize(blob.length);
  const versionSize = version === undefined ? 0 : 1 + varintSize(version.length) + version.length;
  const headSize = headerFieldSize + uint64FieldSize(remaining) + blobHeadSize;
  const head = new WireWriter(5 + headSize + (blob.length === 0 ? versionSize : 0));
  head.buf[0] = 0;
  head.buf.writeUInt32BE(headSize + blob.length + versionSize, 1);
  head.pos = 5;
  if (header !== undefined) {
    head.varint(tag(1, LEN));
    head.varint(headerSize);
    header.forEach((v, i) => writeUint64Field(head, i + 1, v));
  }
  writeUint64Field(head, 2, remaining);
  if (blob.length === 0) {
    if (version !== undefined) head.bytes(4, version);
    return [head.buf];
  }
  head.varint(tag(3, LEN));
  head.varint(blob.length);
  if (version === undefined) return [head.buf, blob];
  const tail = new WireWriter(versionSize);
  tail.bytes(4, version);
  return [head.buf, blob, tail.buf];
}
