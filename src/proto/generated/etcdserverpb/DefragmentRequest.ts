// Original file: src/proto/etcdserverpb/rpc.proto


export interface DefragmentRequest__Input {
}

export interface DefragmentRequest__Output {
}
