// Original file: src/proto/v3electionpb/v3election.proto


export interface LeaderRequest__Input {
  'name'?: (Buffer | Uint8Array | string);
}

export interface LeaderRequest__Output {
  'name': (Buffer);
}
