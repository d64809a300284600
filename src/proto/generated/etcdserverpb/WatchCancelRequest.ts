// Original file: src/proto/etcdserverpb/rpc.proto

import type { Long } from '@grpc/proto-loader';

export interface WatchCancelRequest__Input {
  'watch_id'?: (number | string | Long);
}

export interface WatchCancelRequest__Output {
  'watch_id': (string);
}
