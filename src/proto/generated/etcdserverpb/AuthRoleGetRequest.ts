// Original file: src/proto/etcdserverpb/rpc.proto


export interface AuthRoleGetRequest__Input {
  'role'?: (string);
}

export interface AuthRoleGetRequest__Output {
  'role': (string);
}
