// Original file: src/proto/etcdserverpb/rpc.proto

import type { Long } from '@grpc/proto-loader';

export interface LeaseStatus__Input {
  'ID'?: (number | string | Long);
}

export interface LeaseStatus__Output {
  'ID': (string);
}
