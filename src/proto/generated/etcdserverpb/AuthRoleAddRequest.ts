// Original file: src/proto/etcdserverpb/rpc.proto


export interface AuthRoleAddRequest__Input {
  'name'?: (string);
}

export interface AuthRoleAddRequest__Output {
  'name': (string);
}
