// Original file: src/proto/etcdserverpb/rpc.proto

import type { Long } from '@grpc/proto-loader';

export interface MemberPromoteRequest__Input {
  'ID'?: (number | string | Long);
}

export interface MemberPromoteRequest__Output {
  'ID': (string);
}
