// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';
import type { Long } from '@grpc/proto-loader';

export interface HashKVResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'hash'?: (number);
  'compact_revision'?: (number | string | Long);
  'hash_revision'?: (number | string | Long);
}

export interface HashKVResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'hash': (number);
  'compact_revision': (string);
  'hash_revision': (string);
}
