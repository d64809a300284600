// Original file: src/grpc/proto/etcdserverpb/rpc.proto


export interface StatusRequest__Input {
}

export interface StatusRequest__Output {
}
