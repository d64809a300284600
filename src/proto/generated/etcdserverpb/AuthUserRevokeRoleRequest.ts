// Original file: src/proto/etcdserverpb/rpc.proto


export interface AuthUserRevokeRoleRequest__Input {
  'name'?: (string);
  'role'?: (string);
}

export interface AuthUserRevokeRoleRequest__Output {
  'name': (string);
  'role': (string);
}
