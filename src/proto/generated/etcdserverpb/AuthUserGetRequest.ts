// Original file: src/proto/etcdserverpb/rpc.proto


export interface AuthUserGetRequest__Input {
  'name'?: (string);
}

export interface AuthUserGetRequest__Output {
  'name': (string);
}
