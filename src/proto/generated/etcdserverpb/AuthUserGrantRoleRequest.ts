// Original file: src/proto/etcdserverpb/rpc.proto


export interface AuthUserGrantRoleRequest__Input {
  'user'?: (string);
  'role'?: (string);
}

export interface AuthUserGrantRoleRequest__Output {
  'user': (string);
  'role': (string);
}
