// Original file: src/proto/etcdserverpb/rpc.proto

import type { MethodDefinition } from '@grpc/proto-loader'
import type { WatchRequest__Input as _etcdserverpb_WatchRequest__Input, WatchRequest__Output as _etcdserverpb_WatchRequest__Output } from '../etcdserverpb/WatchRequest.js';
import type { WatchResponse__Input as _etcdserverpb_WatchResponse__Input, WatchResponse__Output as _etcdserverpb_WatchResponse__Output } from '../etcdserverpb/WatchResponse.js';

export interface WatchDefinition {
  Watch: MethodDefinition<_etcdserverpb_WatchRequest__Input, _etcdserverpb_WatchResponse__Input, _etcdserverpb_WatchRequest__Output, _etcdserverpb_WatchResponse__Output>
}
