// Original file: src/proto/etcdserverpb/rpc.proto


export interface MemberListRequest__Input {
  'linearizable'?: (boolean);
}

export interface MemberListRequest__Output {
  'linearizable': (boolean);
}
