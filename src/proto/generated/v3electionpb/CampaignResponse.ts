// Original file: src/proto/v3electionpb/v3election.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';
import type { LeaderKey__Input as _v3electionpb_LeaderKey__Input, LeaderKey__Output as _v3electionpb_LeaderKey__Output } from '../v3electionpb/LeaderKey.js';

export interface CampaignResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'leader'?: (_v3electionpb_LeaderKey__Input | null);
}

export interface CampaignResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'leader': (_v3electionpb_LeaderKey__Output | null);
}
