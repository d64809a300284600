// Original file: src/proto/etcdserverpb/rpc.proto

import type { Long } from '@grpc/proto-loader';

export interface CompactionRequest__Input {
  'revision'?: (number | string | Long);
  'physical'?: (boolean);
}

export interface CompactionRequest__Output {
  'revision': (string);
  'physical': (boolean);
}
