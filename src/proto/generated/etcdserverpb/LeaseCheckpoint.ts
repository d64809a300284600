// Original file: src/proto/etcdserverpb/rpc.proto

import type { Long } from '@grpc/proto-loader';

export interface LeaseCheckpoint__Input {
  'ID'?: (number | string | Long);
  'remaining_TTL'?: (number | string | Long);
}

export interface LeaseCheckpoint__Output {
  'ID': (string);
  'remaining_TTL': (string);
}
