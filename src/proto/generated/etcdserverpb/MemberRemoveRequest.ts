// Original file: src/proto/etcdserverpb/rpc.proto

import type { Long } from '@grpc/proto-loader';

export interface MemberRemoveRequest__Input {
  'ID'?: (number | string | Long);
}

export interface MemberRemoveRequest__Output {
  'ID': (string);
}
