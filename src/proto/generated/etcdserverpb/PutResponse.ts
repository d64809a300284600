// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';
import type { KeyValue__Input as _mvccpb_KeyValue__Input, KeyValue__Output as _mvccpb_KeyValue__Output } from '../mvccpb/KeyValue.js';

export interface PutResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'prev_kv'?: (_mvccpb_KeyValue__Input | null);
}

export interface PutResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'prev_kv': (_mvccpb_KeyValue__Output | null);
}
