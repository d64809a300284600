// Original file: src/proto/etcdserverpb/rpc.proto


export interface StatusRequest__Input {
}

export interface StatusRequest__Output {
}
