// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';
import type { Long } from '@grpc/proto-loader';

export interface SnapshotResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'remaining_bytes'?: (number | string | Long);
  'blob'?: (Buffer | Uint8Array | string);
  'version'?: (string);
}

export interface SnapshotResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'remaining_bytes': (string);
  'blob': (Buffer);
  'version': (string);
}
