// Original file: src/proto/etcdserverpb/rpc.proto

import type { Long } from '@grpc/proto-loader';

// Original file: src/proto/etcdserverpb/rpc.proto

export const _etcdserverpb_Compare_CompareResult = {
  EQUAL: 'EQUAL',
  GREATER: 'GREATER',
  LESS: 'LESS',
  NOT_EQUAL: 'NOT_EQUAL',
} as const;

export type _etcdserverpb_Compare_CompareResult__Input =
  | 'EQUAL'
  | 0
  | 'GREATER'
  | 1
  | 'LESS'
  | 2
  | 'NOT_EQUAL'
  | 3

export type _etcdserverpb_Compare_CompareResult__Output = typeof _etcdserverpb_Compare_CompareResult[keyof typeof _etcdserverpb_Compare_CompareResult]

// Original file: src/proto/etcdserverpb/rpc.proto

export const _etcdserverpb_Compare_CompareTarget = {
  VERSION: 'VERSION',
  CREATE: 'CREATE',
  MOD: 'MOD',
  VALUE: 'VALUE',
  LEASE: 'LEASE',
} as const;

export type _etcdserverpb_Compare_CompareTarget__Input =
  | 'VERSION'
  | 0
  | 'CREATE'
  | 1
  | 'MOD'
  | 2
  | 'VALUE'
  | 3
  | 'LEASE'
  | 4

export type _etcdserverpb_Compare_CompareTarget__Output = typeof _etcdserverpb_Compare_CompareTarget[keyof typeof _etcdserverpb_Compare_CompareTarget]

export interface Compare__Input {
  'result'?: (_etcdserverpb_Compare_CompareResult__Input);
  'target'?: (_etcdserverpb_Compare_CompareTarget__Input);
  'key'?: (Buffer | Uint8Array | string);
  'version'?: (number | string | Long);
  'create_revision'?: (number | string | Long);
  'mod_revision'?: (number | string | Long);
  'value'?: (Buffer | Uint8Array | string);
  'lease'?: (number | string | Long);
  'range_end'?: (Buffer | Uint8Array | string);
  'target_union'?: "version"|"create_revision"|"mod_revision"|"value"|"lease";
}

export interface Compare__Output {
  'result': (_etcdserverpb_Compare_CompareResult__Output);
  'target': (_etcdserverpb_Compare_CompareTarget__Output);
  'key': (Buffer);
  'version'?: (string);
  'create_revision'?: (string);
  'mod_revision'?: (string);
  'value'?: (Buffer);
  'lease'?: (string);
  'range_end': (Buffer);
  'target_union'?: "version"|"create_revision"|"mod_revision"|"value"|"lease";
}
