// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';
import type { ResponseOp__Input as _etcdserverpb_ResponseOp__Input, ResponseOp__Output as _etcdserverpb_ResponseOp__Output } from '../etcdserverpb/ResponseOp.js';

export interface TxnResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'succeeded'?: (boolean);
  'responses'?: (_etcdserverpb_ResponseOp__Input)[];
}

export interface TxnResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'succeeded': (boolean);
  'responses': (_etcdserverpb_ResponseOp__Output)[];
}
