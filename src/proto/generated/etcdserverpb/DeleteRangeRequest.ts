// Original file: src/proto/etcdserverpb/rpc.proto


export interface DeleteRangeRequest__Input {
  'key'?: (Buffer | Uint8Array | string);
  'range_end'?: (Buffer | Uint8Array | string);
  'prev_kv'?: (boolean);
}

export interface DeleteRangeRequest__Output {
  'key': (Buffer);
  'range_end': (Buffer);
  'prev_kv': (boolean);
}
