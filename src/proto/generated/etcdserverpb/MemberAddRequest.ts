// Original file: src/proto/etcdserverpb/rpc.proto


export interface MemberAddRequest__Input {
  'peerURLs'?: (string)[];
  'isLearner'?: (boolean);
}

export interface MemberAddRequest__Output {
  'peerURLs': (string)[];
  'isLearner': (boolean);
}
