// Original file: src/proto/etcdserverpb/rpc.proto


export interface AuthenticateRequest__Input {
  'name'?: (string);
  'password'?: (string);
}

export interface AuthenticateRequest__Output {
  'name': (string);
  'password': (string);
}
