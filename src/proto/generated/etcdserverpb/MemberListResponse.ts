// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';
import type { Member__Input as _etcdserverpb_Member__Input, Member__Output as _etcdserverpb_Member__Output } from '../etcdserverpb/Member.js';

export interface MemberListResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'members'?: (_etcdserverpb_Member__Input)[];
}

export interface MemberListResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'members': (_etcdserverpb_Member__Output)[];
}
