// Original file: src/proto/etcdserverpb/rpc.proto


export interface AuthEnableRequest__Input {
}

export interface AuthEnableRequest__Output {
}
