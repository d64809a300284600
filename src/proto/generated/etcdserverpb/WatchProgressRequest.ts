// Original file: src/proto/etcdserverpb/rpc.proto


export interface WatchProgressRequest__Input {
}

export interface WatchProgressRequest__Output {
}
