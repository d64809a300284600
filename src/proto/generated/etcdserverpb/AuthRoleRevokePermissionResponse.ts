// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';

export interface AuthRoleRevokePermissionResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
}

export interface AuthRoleRevokePermissionResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
}
