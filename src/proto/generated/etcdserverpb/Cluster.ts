// Original file: src/proto/etcdserverpb/rpc.proto

import type { MethodDefinition } from '@grpc/proto-loader'
import type { MemberAddRequest__Input as _etcdserverpb_MemberAddRequest__Input, MemberAddRequest__Output as _etcdserverpb_MemberAddRequest__Output } from '../etcdserverpb/MemberAddRequest.js';
import type { MemberAddResponse__Input as _etcdserverpb_MemberAddResponse__Input, MemberAddResponse__Output as _etcdserverpb_MemberAddResponse__Output } from '../etcdserverpb/MemberAddResponse.js';
import type { MemberListRequest__Input as _etcdserverpb_MemberListRequest__Input, MemberListRequest__Output as _etcdserverpb_MemberListRequest__Output } from '../etcdserverpb/MemberListRequest.js';
import type { MemberListResponse__Input as _etcdserverpb_MemberListResponse__Input, MemberListResponse__Output as _etcdserverpb_MemberListResponse__Output } from '../etcdserverpb/MemberListResponse.js';
import type { MemberPromoteRequest__Input as _etcdserverpb_MemberPromoteRequest__Input, MemberPromoteRequest__Output as _etcdserverpb_MemberPromoteRequest__Output } from '../etcdserverpb/MemberPromoteRequest.js';
import type { MemberPromoteResponse__Input as _etcdserverpb_MemberPromoteResponse__Input, MemberPromoteResponse__Output as _etcdserverpb_MemberPromoteResponse__Output } from '../etcdserverpb/MemberPromoteResponse.js';
import type { MemberRemoveRequest__Input as _etcdserverpb_MemberRemoveRequest__Input, MemberRemoveRequest__Output as _etcdserverpb_MemberRemoveRequest__Output } from '../etcdserverpb/MemberRemoveRequest.js';
import type { MemberRemoveResponse__Input as _etcdserverpb_MemberRemoveResponse__Input, MemberRemoveResponse__Output as _etcdserverpb_MemberRemoveResponse__Output } from '../etcdserverpb/MemberRemoveResponse.js';
import type { MemberUpdateRequest__Input as _etcdserverpb_MemberUpdateRequest__Input, MemberUpdateRequest__Output as _etcdserverpb_MemberUpdateRequest__Output } from '../etcdserverpb/MemberUpdateRequest.js';
import type { MemberUpdateResponse__Input as _etcdserverpb_MemberUpdateResponse__Input, MemberUpdateResponse__Output as _etcdserverpb_MemberUpdateResponse__Output } from '../etcdserverpb/MemberUpdateResponse.js';

export interface ClusterDefinition {
  MemberAdd: MethodDefinition<_etcdserverpb_MemberAddRequest__Input, _etcdserverpb_MemberAddResponse__Input, _etcdserverpb_MemberAddRequest__Output, _etcdserverpb_MemberAddResponse__Output>
  MemberList: MethodDefinition<_etcdserverpb_MemberListRequest__Input, _etcdserverpb_MemberListResponse__Input, _etcdserverpb_MemberListRequest__Output, _etcdserverpb_MemberListResponse__Output>
  MemberPromote: MethodDefinition<_etcdserverpb_MemberPromoteRequest__Input, _etcdserverpb_MemberPromoteResponse__Input, _etcdserverpb_MemberPromoteRequest__Output, _etcdserverpb_MemberPromoteResponse__Output>
  MemberRemove: MethodDefinition<_etcdserverpb_MemberRemoveRequest__Input, _etcdserverpb_MemberRemoveResponse__Input, _etcdserverpb_MemberRemoveRequest__Output, _etcdserverpb_MemberRemoveResponse__Output>
  MemberUpdate: MethodDefinition<_etcdserverpb_MemberUpdateRequest__Input, _etcdserverpb_MemberUpdateResponse__Input, _etcdserverpb_MemberUpdateRequest__Output, _etcdserverpb_MemberUpdateResponse__Output>
}
