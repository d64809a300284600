// Original file: src/proto/etcdserverpb/rpc.proto


export interface AuthRoleListRequest__Input {
}

export interface AuthRoleListRequest__Output {
}
