// Original file: src/proto/etcdserverpb/rpc.proto


export interface SnapshotRequest__Input {
}

export interface SnapshotRequest__Output {
}
