// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';
import type { KeyValue__Input as _mvccpb_KeyValue__Input, KeyValue__Output as _mvccpb_KeyValue__Output } from '../mvccpb/KeyValue.js';
import type { Long } from '@grpc/proto-loader';

export interface DeleteRangeResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'deleted'?: (number | string | Long);
  'prev_kvs'?: (_mvccpb_KeyValue__Input)[];
}

export interface DeleteRangeResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'deleted': (string);
  'prev_kvs': (_mvccpb_KeyValue__Output)[];
}
