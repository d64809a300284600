// Original file: src/proto/etcdserverpb/rpc.proto

import type { Long } from '@grpc/proto-loader';

// Original file: src/proto/etcdserverpb/rpc.proto

export const _etcdserverpb_WatchCreateRequest_FilterType = {
  NOPUT: 'NOPUT',
  NODELETE: 'NODELETE',
} as const;

export type _etcdserverpb_WatchCreateRequest_FilterType__Input =
  | 'NOPUT'
  | 0
  | 'NODELETE'
  | 1

export type _etcdserverpb_WatchCreateRequest_FilterType__Output = typeof _etcdserverpb_WatchCreateRequest_FilterType[keyof typeof _etcdserverpb_WatchCreateRequest_FilterType]

export interface WatchCreateRequest__Input {
  'key'?: (Buffer | Uint8Array | string);
  'range_end'?: (Buffer | Uint8Array | string);
  'start_revision'?: (number | string | Long);
  'progress_notify'?: (boolean);
  'filters'?: (_etcdserverpb_WatchCreateRequest_FilterType__Input)[];
  'prev_kv'?: (boolean);
  'watch_id'?: (number | string | Long);
  'fragment'?: (boolean);
}

export interface WatchCreateRequest__Output {
  'key': (Buffer);
  'range_end': (Buffer);
  'start_revision': (string);
  'progress_notify': (boolean);
  'filters': (_etcdserverpb_WatchCreateRequest_FilterType__Output)[];
  'prev_kv': (boolean);
  'watch_id': (string);
  'fragment': (boolean);
}
