// Original file: src/proto/etcdserverpb/rpc.proto

import type { Long } from '@grpc/proto-loader';

export interface LeaseTimeToLiveRequest__Input {
  'ID'?: (number | string | Long);
  'keys'?: (boolean);
}

export interface LeaseTimeToLiveRequest__Output {
  'ID': (string);
  'keys': (boolean);
}
