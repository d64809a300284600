// Original file: src/proto/etcdserverpb/rpc.proto


export interface AuthUserDeleteRequest__Input {
  'name'?: (string);
}

export interface AuthUserDeleteRequest__Output {
  'name': (string);
}
