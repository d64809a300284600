// Original file: src/proto/etcdserverpb/rpc.proto

import type { AlarmType__Input as _etcdserverpb_AlarmType__Input, AlarmType__Output as _etcdserverpb_AlarmType__Output } from '../etcdserverpb/AlarmType.js';
import type { Long } from '@grpc/proto-loader';

// Original file: src/proto/etcdserverpb/rpc.proto

export const _etcdserverpb_AlarmRequest_AlarmAction = {
  GET: 'GET',
  ACTIVATE: 'ACTIVATE',
  DEACTIVATE: 'DEACTIVATE',
} as const;

export type _etcdserverpb_AlarmRequest_AlarmAction__Input =
  | 'GET'
  | 0
  | 'ACTIVATE'
  | 1
  | 'DEACTIVATE'
  | 2

export type _etcdserverpb_AlarmRequest_AlarmAction__Output = typeof _etcdserverpb_AlarmRequest_AlarmAction[keyof typeof _etcdserverpb_AlarmRequest_AlarmAction]

export interface AlarmRequest__Input {
  'action'?: (_etcdserverpb_AlarmRequest_AlarmAction__Input);
  'memberID'?: (number | string | Long);
  'alarm'?: (_etcdserverpb_AlarmType__Input);
}

export interface AlarmRequest__Output {
  'action': (_etcdserverpb_AlarmRequest_AlarmAction__Output);
  'memberID': (string);
  'alarm': (_etcdserverpb_AlarmType__Output);
}
