// Original file: src/proto/etcdserverpb/rpc.proto

import type { Long } from '@grpc/proto-loader';

export interface MoveLeaderRequest__Input {
  'targetID'?: (number | string | Long);
}

export interface MoveLeaderRequest__Output {
  'targetID': (string);
}
