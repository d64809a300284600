// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';
import type { LeaseStatus__Input as _etcdserverpb_LeaseStatus__Input, LeaseStatus__Output as _etcdserverpb_LeaseStatus__Output } from '../etcdserverpb/LeaseStatus.js';

export interface LeaseLeasesResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'leases'?: (_etcdserverpb_LeaseStatus__Input)[];
}

export interface LeaseLeasesResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'leases': (_etcdserverpb_LeaseStatus__Output)[];
}
