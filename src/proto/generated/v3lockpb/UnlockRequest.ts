// Original file: src/proto/v3lockpb/v3lock.proto


export interface UnlockRequest__Input {
  'key'?: (Buffer | Uint8Array | string);
}

export interface UnlockRequest__Output {
  'key': (Buffer);
}
