// Original file: src/proto/etcdserverpb/rpc.proto


export interface AuthDisableRequest__Input {
}

export interface AuthDisableRequest__Output {
}
