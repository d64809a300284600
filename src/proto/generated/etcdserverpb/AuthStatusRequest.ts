// Original file: src/proto/etcdserverpb/rpc.proto


export interface AuthStatusRequest__Input {
}

export interface AuthStatusRequest__Output {
}
