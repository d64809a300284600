// Original file: src/proto/etcdserverpb/rpc.proto

import type { WatchCreateRequest__Input as _etcdserverpb_WatchCreateRequest__Input, WatchCreateRequest__Output as _etcdserverpb_WatchCreateRequest__Output } from '../etcdserverpb/WatchCreateRequest.js';
import type { WatchCancelRequest__Input as _etcdserverpb_WatchCancelRequest__Input, WatchCancelRequest__Output as _etcdserverpb_WatchCancelRequest__Output } from '../etcdserverpb/WatchCancelRequest.js';
import type { WatchProgressRequest__Input as _etcdserverpb_WatchProgressRequest__Input, WatchProgressRequest__Output as _etcdserverpb_WatchProgressRequest__Output } from '../etcdserverpb/WatchProgressRequest.js';

export interface WatchRequest__Input {
  'create_request'?: (_etcdserverpb_WatchCreateRequest__Input | null);
  'cancel_request'?: (_etcdserverpb_WatchCancelRequest__Input | null);
  'progress_request'?: (_etcdserverpb_WatchProgressRequest__Input | null);
  'request_union'?: "create_request"|"cancel_request"|"progress_request";
}

export interface WatchRequest__Output {
  'create_request'?: (_etcdserverpb_WatchCreateRequest__Output | null);
  'cancel_request'?: (_etcdserverpb_WatchCancelRequest__Output | null);
  'progress_request'?: (_etcdserverpb_WatchProgressRequest__Output | null);
  'request_union'?: "create_request"|"cancel_request"|"progress_request";
}
