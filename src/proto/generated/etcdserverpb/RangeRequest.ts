// Original file: src/proto/etcdserverpb/rpc.proto

import type { Long } from '@grpc/proto-loader';

// Original file: src/proto/etcdserverpb/rpc.proto

export const _etcdserverpb_RangeRequest_SortOrder = {
  NONE: 'NONE',
  ASCEND: 'ASCEND',
  DESCEND: 'DESCEND',
} as const;

export type _etcdserverpb_RangeRequest_SortOrder__Input =
  | 'NONE'
  | 0
  | 'ASCEND'
  | 1
  | 'DESCEND'
  | 2

export type _etcdserverpb_RangeRequest_SortOrder__Output = typeof _etcdserverpb_RangeRequest_SortOrder[keyof typeof _etcdserverpb_RangeRequest_SortOrder]

// Original file: src/proto/etcdserverpb/rpc.proto

export const _etcdserverpb_RangeRequest_SortTarget = {
  KEY: 'KEY',
  VERSION: 'VERSION',
  CREATE: 'CREATE',
  MOD: 'MOD',
  VALUE: 'VALUE',
} as const;

export type _etcdserverpb_RangeRequest_SortTarget__Input =
  | 'KEY'
  | 0
  | 'VERSION'
  | 1
  | 'CREATE'
  | 2
  | 'MOD'
  | 3
  | 'VALUE'
  | 4

export type _etcdserverpb_RangeRequest_SortTarget__Output = typeof _etcdserverpb_RangeRequest_SortTarget[keyof typeof _etcdserverpb_RangeRequest_SortTarget]

export interface RangeRequest__Input {
  'key'?: (Buffer | Uint8Array | string);
  'range_end'?: (Buffer | Uint8Array | string);
  'limit'?: (number | string | Long);
  'revision'?: (number | string | Long);
  'sort_order'?: (_etcdserverpb_RangeRequest_SortOrder__Input);
  'sort_target'?: (_etcdserverpb_RangeRequest_SortTarget__Input);
  'serializable'?: (boolean);
  'keys_only'?: (boolean);
  'count_only'?: (boolean);
  'min_mod_revision'?: (number | string | Long);
  'max_mod_revision'?: (number | string | Long);
  'min_create_revision'?: (number | string | Long);
  'max_create_revision'?: (number | string | Long);
}

export interface RangeRequest__Output {
  'key': (Buffer);
  'range_end': (Buffer);
  'limit': (string);
  'revision': (string);
  'sort_order': (_etcdserverpb_RangeRequest_SortOrder__Output);
  'sort_target': (_etcdserverpb_RangeRequest_SortTarget__Output);
  'serializable': (boolean);
  'keys_only': (boolean);
  'count_only': (boolean);
  'min_mod_revision': (string);
  'max_mod_revision': (string);
  'min_create_revision': (string);
  'max_create_revision': (string);
}
