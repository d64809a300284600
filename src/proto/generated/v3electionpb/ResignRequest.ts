// Original file: src/proto/v3electionpb/v3election.proto

import type { LeaderKey__Input as _v3electionpb_LeaderKey__Input, LeaderKey__Output as _v3electionpb_LeaderKey__Output } from '../v3electionpb/LeaderKey.js';

export interface ResignRequest__Input {
  'leader'?: (_v3electionpb_LeaderKey__Input | null);
}

export interface ResignRequest__Output {
  'leader': (_v3electionpb_LeaderKey__Output | null);
}
