// Original file: src/proto/etcdserverpb/rpc.proto

import type { Long } from '@grpc/proto-loader';

export interface LeaseGrantRequest__Input {
  'TTL'?: (number | string | Long);
  'ID'?: (number | string | Long);
}

export interface LeaseGrantRequest__Output {
  'TTL': (string);
  'ID': (string);
}
