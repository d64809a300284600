// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';
import type { Long } from '@grpc/proto-loader';

export interface LeaseKeepAliveResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'ID'?: (number | string | Long);
  'TTL'?: (number | string | Long);
}

export interface LeaseKeepAliveResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'ID': (string);
  'TTL': (string);
}
