// Original file: src/proto/etcdserverpb/rpc.proto

import type { Permission__Input as _authpb_Permission__Input, Permission__Output as _authpb_Permission__Output } from '../authpb/Permission.js';

export interface AuthRoleGrantPermissionRequest__Input {
  'name'?: (string);
  'perm'?: (_authpb_Permission__Input | null);
}

export interface AuthRoleGrantPermissionRequest__Output {
  'name': (string);
  'perm': (_authpb_Permission__Output | null);
}
