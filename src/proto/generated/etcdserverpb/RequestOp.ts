// Original file: src/proto/etcdserverpb/rpc.proto

import type { RangeRequest__Input as _etcdserverpb_RangeRequest__Input, RangeRequest__Output as _etcdserverpb_RangeRequest__Output } from '../etcdserverpb/RangeRequest.js';
import type { PutRequest__Input as _etcdserverpb_PutRequest__Input, PutRequest__Output as _etcdserverpb_PutRequest__Output } from '../etcdserverpb/PutRequest.js';
import type { DeleteRangeRequest__Input as _etcdserverpb_DeleteRangeRequest__Input, DeleteRangeRequest__Output as _etcdserverpb_DeleteRangeRequest__Output } from '../etcdserverpb/DeleteRangeRequest.js';
import type { TxnRequest__Input as _etcdserverpb_TxnRequest__Input, TxnRequest__Output as _etcdserverpb_TxnRequest__Output } from '../etcdserverpb/TxnRequest.js';

export interface RequestOp__Input {
  'request_range'?: (_etcdserverpb_RangeRequest__Input | null);
  'request_put'?: (_etcdserverpb_PutRequest__Input | null);
  'request_delete_range'?: (_etcdserverpb_DeleteRangeRequest__Input | null);
  'request_txn'?: (_etcdserverpb_TxnRequest__Input | null);
  'request'?: "request_range"|"request_put"|"request_delete_range"|"request_txn";
}

export interface RequestOp__Output {
  'request_range'?: (_etcdserverpb_RangeRequest__Output | null);
  'request_put'?: (_etcdserverpb_PutRequest__Output | null);
  'request_delete_range'?: (_etcdserverpb_DeleteRangeRequest__Output | null);
  'request_txn'?: (_etcdserverpb_TxnRequest__Output | null);
  'request'?: "request_range"|"request_put"|"request_delete_range"|"request_txn";
}
