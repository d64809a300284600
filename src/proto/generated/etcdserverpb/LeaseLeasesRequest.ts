// Original file: src/proto/etcdserverpb/rpc.proto


export interface LeaseLeasesRequest__Input {
}

export interface LeaseLeasesRequest__Output {
}
