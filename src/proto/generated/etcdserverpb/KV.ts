// Original file: src/proto/etcdserverpb/rpc.proto

import type { MethodDefinition } from '@grpc/proto-loader'
import type { CompactionRequest__Input as _etcdserverpb_CompactionRequest__Input, CompactionRequest__Output as _etcdserverpb_CompactionRequest__Output } from '../etcdserverpb/CompactionRequest.js';
import type { CompactionResponse__Input as _etcdserverpb_CompactionResponse__Input, CompactionResponse__Output as _etcdserverpb_CompactionResponse__Output } from '../etcdserverpb/CompactionResponse.js';
import type { DeleteRangeRequest__Input as _etcdserverpb_DeleteRangeRequest__Input, DeleteRangeRequest__Output as _etcdserverpb_DeleteRangeRequest__Output } from '../etcdserverpb/DeleteRangeRequest.js';
import type { DeleteRangeResponse__Input as _etcdserverpb_DeleteRangeResponse__Input, DeleteRangeResponse__Output as _etcdserverpb_DeleteRangeResponse__Output } from '../etcdserverpb/DeleteRangeResponse.js';
import type { PutRequest__Input as _etcdserverpb_PutRequest__Input, PutRequest__Output as _etcdserverpb_PutRequest__Output } from '../etcdserverpb/PutRequest.js';
import type { PutResponse__Input as _etcdserverpb_PutResponse__Input, PutResponse__Output as _etcdserverpb_PutResponse__Output } from '../etcdserverpb/PutResponse.js';
import type { RangeRequest__Input as _etcdserverpb_RangeRequest__Input, RangeRequest__Output as _etcdserverpb_RangeRequest__Output } from '../etcdserverpb/RangeRequest.js';
import type { RangeResponse__Input as _etcdserverpb_RangeResponse__Input, RangeResponse__Output as _etcdserverpb_RangeResponse__Output } from '../etcdserverpb/RangeResponse.js';
import type { RangeStreamResponse__Input as _etcdserverpb_RangeStreamResponse__Input, RangeStreamResponse__Output as _etcdserverpb_RangeStreamResponse__Output } from '../etcdserverpb/RangeStreamResponse.js';
import type { TxnRequest__Input as _etcdserverpb_TxnRequest__Input, TxnRequest__Output as _etcdserverpb_TxnRequest__Output } from '../etcdserverpb/TxnRequest.js';
import type { TxnResponse__Input as _etcdserverpb_TxnResponse__Input, TxnResponse__Output as _etcdserverpb_TxnResponse__Output } from '../etcdserverpb/TxnResponse.js';

export interface KVDefinition {
  Compact: MethodDefinition<_etcdserverpb_CompactionRequest__Input, _etcdserverpb_CompactionResponse__Input, _etcdserverpb_CompactionRequest__Output, _etcdserverpb_CompactionResponse__Output>
  DeleteRange: MethodDefinition<_etcdserverpb_DeleteRangeRequest__Input, _etcdserverpb_DeleteRangeResponse__Input, _etcdserverpb_DeleteRangeRequest__Output, _etcdserverpb_DeleteRangeResponse__Output>
  Put: MethodDefinition<_etcdserverpb_PutRequest__Input, _etcdserverpb_PutResponse__Input, _etcdserverpb_PutRequest__Output, _etcdserverpb_PutResponse__Output>
  Range: MethodDefinition<_etcdserverpb_RangeRequest__Input, _etcdserverpb_RangeResponse__Input, _etcdserverpb_RangeRequest__Output, _etcdserverpb_RangeResponse__Output>
  RangeStream: MethodDefinition<_etcdserverpb_RangeRequest__Input, _etcdserverpb_RangeStreamResponse__Input, _etcdserverpb_RangeRequest__Output, _etcdserverpb_RangeStreamResponse__Output>
  Txn: MethodDefinition<_etcdserverpb_TxnRequest__Input, _etcdserverpb_TxnResponse__Input, _etcdserverpb_TxnRequest__Output, _etcdserverpb_TxnResponse__Output>
}
