// Original file: src/proto/etcdserverpb/rpc.proto

import type { Long } from '@grpc/proto-loader';

export interface MemberUpdateRequest__Input {
  'ID'?: (number | string | Long);
  'peerURLs'?: (string)[];
}

export interface MemberUpdateRequest__Output {
  'ID': (string);
  'peerURLs': (string)[];
}
