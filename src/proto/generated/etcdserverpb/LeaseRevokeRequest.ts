// Original file: src/proto/etcdserverpb/rpc.proto

import type { Long } from '@grpc/proto-loader';

export interface LeaseRevokeRequest__Input {
  'ID'?: (number | string | Long);
}

export interface LeaseRevokeRequest__Output {
  'ID': (string);
}
