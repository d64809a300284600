// Original file: src/proto/etcdserverpb/rpc.proto

import type { Compare__Input as _etcdserverpb_Compare__Input, Compare__Output as _etcdserverpb_Compare__Output } from '../etcdserverpb/Compare.js';
import type { RequestOp__Input as _etcdserverpb_RequestOp__Input, RequestOp__Output as _etcdserverpb_RequestOp__Output } from '../etcdserverpb/RequestOp.js';

export interface TxnRequest__Input {
  'compare'?: (_etcdserverpb_Compare__Input)[];
  'success'?: (_etcdserverpb_RequestOp__Input)[];
  'failure'?: (_etcdserverpb_RequestOp__Input)[];
}

export interface TxnRequest__Output {
  'compare': (_etcdserverpb_Compare__Output)[];
  'success': (_etcdserverpb_RequestOp__Output)[];
  'failure': (_etcdserverpb_RequestOp__Output)[];
}
