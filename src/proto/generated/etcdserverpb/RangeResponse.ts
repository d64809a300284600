// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';
import type { KeyValue__Input as _mvccpb_KeyValue__Input, KeyValue__Output as _mvccpb_KeyValue__Output } from '../mvccpb/KeyValue.js';
import type { Long } from '@grpc/proto-loader';

export interface RangeResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'kvs'?: (_mvccpb_KeyValue__Input)[];
  'more'?: (boolean);
  'count'?: (number | string | Long);
}

export interface RangeResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'kvs': (_mvccpb_KeyValue__Output)[];
  'more': (boolean);
  'count': (string);
}
