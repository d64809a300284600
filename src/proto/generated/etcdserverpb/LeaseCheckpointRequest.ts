// Original file: src/proto/etcdserverpb/rpc.proto

import type { LeaseCheckpoint__Input as _etcdserverpb_LeaseCheckpoint__Input, LeaseCheckpoint__Output as _etcdserverpb_LeaseCheckpoint__Output } from '../etcdserverpb/LeaseCheckpoint.js';

export interface LeaseCheckpointRequest__Input {
  'checkpoints'?: (_etcdserverpb_LeaseCheckpoint__Input)[];
}

export interface LeaseCheckpointRequest__Output {
  'checkpoints': (_etcdserverpb_LeaseCheckpoint__Output)[];
}
