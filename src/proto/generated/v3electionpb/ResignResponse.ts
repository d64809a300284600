// Original file: src/proto/v3electionpb/v3election.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';

export interface ResignResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
}

export interface ResignResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
}
