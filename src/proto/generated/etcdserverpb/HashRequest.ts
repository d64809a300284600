// Original file: src/proto/etcdserverpb/rpc.proto


export interface HashRequest__Input {
}

export interface HashRequest__Output {
}
