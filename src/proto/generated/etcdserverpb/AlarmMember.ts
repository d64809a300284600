// Original file: src/proto/etcdserverpb/rpc.proto

import type { AlarmType__Input as _etcdserverpb_AlarmType__Input, AlarmType__Output as _etcdserverpb_AlarmType__Output } from '../etcdserverpb/AlarmType.js';
import type { Long } from '@grpc/proto-loader';

export interface AlarmMember__Input {
  'memberID'?: (number | string | Long);
  'alarm'?: (_etcdserverpb_AlarmType__Input);
}

export interface AlarmMember__Output {
  'memberID': (string);
  'alarm': (_etcdserverpb_AlarmType__Output);
}
