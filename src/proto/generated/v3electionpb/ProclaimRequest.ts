// Original file: src/proto/v3electionpb/v3election.proto

import type { LeaderKey__Input as _v3electionpb_LeaderKey__Input, LeaderKey__Output as _v3electionpb_LeaderKey__Output } from '../v3electionpb/LeaderKey.js';

export interface ProclaimRequest__Input {
  'leader'?: (_v3electionpb_LeaderKey__Input | null);
  'value'?: (Buffer | Uint8Array | string);
}

export interface ProclaimRequest__Output {
  'leader': (_v3electionpb_LeaderKey__Output | null);
  'value': (Buffer);
}
