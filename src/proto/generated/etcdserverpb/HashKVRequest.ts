// Original file: src/proto/etcdserverpb/rpc.proto

import type { Long } from '@grpc/proto-loader';

export interface HashKVRequest__Input {
  'revision'?: (number | string | Long);
}

export interface HashKVRequest__Output {
  'revision': (string);
}
