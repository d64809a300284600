// Original file: src/grpc/proto/etcdserverpb/rpc.proto


export interface AuthUserGetRequest__Input {
  'name'?: (string);
}

export interface AuthUserGetRequest__Output {
  'name': (string);
}
