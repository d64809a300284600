// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';
import type { Permission__Input as _authpb_Permission__Input, Permission__Output as _authpb_Permission__Output } from '../authpb/Permission.js';

export interface AuthRoleGetResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'perm'?: (_authpb_Permission__Input)[];
}

export interface AuthRoleGetResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'perm': (_authpb_Permission__Output)[];
}
