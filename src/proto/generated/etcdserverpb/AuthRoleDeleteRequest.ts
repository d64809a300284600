// Original file: src/proto/etcdserverpb/rpc.proto


export interface AuthRoleDeleteRequest__Input {
  'role'?: (string);
}

export interface AuthRoleDeleteRequest__Output {
  'role': (string);
}
