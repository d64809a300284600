// Original file: src/proto/etcdserverpb/rpc.proto

import type { RangeResponse__Input as _etcdserverpb_RangeResponse__Input, RangeResponse__Output as _etcdserverpb_RangeResponse__Output } from '../etcdserverpb/RangeResponse.js';
import type { PutResponse__Input as _etcdserverpb_PutResponse__Input, PutResponse__Output as _etcdserverpb_PutResponse__Output } from '../etcdserverpb/PutResponse.js';
import type { DeleteRangeResponse__Input as _etcdserverpb_DeleteRangeResponse__Input, DeleteRangeResponse__Output as _etcdserverpb_DeleteRangeResponse__Output } from '../etcdserverpb/DeleteRangeResponse.js';
import type { TxnResponse__Input as _etcdserverpb_TxnResponse__Input, TxnResponse__Output as _etcdserverpb_TxnResponse__Output } from '../etcdserverpb/TxnResponse.js';

export interface ResponseOp__Input {
  'response_range'?: (_etcdserverpb_RangeResponse__Input | null);
  'response_put'?: (_etcdserverpb_PutResponse__Input | null);
  'response_delete_range'?: (_etcdserverpb_DeleteRangeResponse__Input | null);
  'response_txn'?: (_etcdserverpb_TxnResponse__Input | null);
  'response'?: "response_range"|"response_put"|"response_delete_range"|"response_txn";
}

export interface ResponseOp__Output {
  'response_range'?: (_etcdserverpb_RangeResponse__Output | null);
  'response_put'?: (_etcdserverpb_PutResponse__Output | null);
  'response_delete_range'?: (_etcdserverpb_DeleteRangeResponse__Output | null);
  'response_txn'?: (_etcdserverpb_TxnResponse__Output | null);
  'response'?: "response_range"|"response_put"|"response_delete_range"|"response_txn";
}
