// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';
import type { Long } from '@grpc/proto-loader';

export interface LeaseTimeToLiveResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'ID'?: (number | string | Long);
  'TTL'?: (number | string | Long);
  'grantedTTL'?: (number | string | Long);
  'keys'?: (Buffer | Uint8Array | string)[];
}

export interface LeaseTimeToLiveResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'ID': (string);
  'TTL': (string);
  'grantedTTL': (string);
  'keys': (Buffer)[];
}
