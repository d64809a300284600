// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';
import type { AlarmMember__Input as _etcdserverpb_AlarmMember__Input, AlarmMember__Output as _etcdserverpb_AlarmMember__Output } from '../etcdserverpb/AlarmMember.js';

export interface AlarmResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'alarms'?: (_etcdserverpb_AlarmMember__Input)[];
}

export interface AlarmResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'alarms': (_etcdserverpb_AlarmMember__Output)[];
}
