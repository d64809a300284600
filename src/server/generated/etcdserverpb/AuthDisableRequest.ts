// Original file: src/grpc/proto/etcdserverpb/rpc.proto


export interface AuthDisableRequest__Input {
}

export interface AuthDisableRequest__Output {
}
