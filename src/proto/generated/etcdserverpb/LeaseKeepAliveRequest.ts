// Original file: src/proto/etcdserverpb/rpc.proto

import type { Long } from '@grpc/proto-loader';

export interface LeaseKeepAliveRequest__Input {
  'ID'?: (number | string | Long);
}

export interface LeaseKeepAliveRequest__Output {
  'ID': (string);
}
