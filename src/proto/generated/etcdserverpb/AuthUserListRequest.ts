// Original file: src/proto/etcdserverpb/rpc.proto


export interface AuthUserListRequest__Input {
}

export interface AuthUserListRequest__Output {
}
