// Original file: src/proto/etcdserverpb/rpc.proto

import type { RangeResponse__Input as _etcdserverpb_RangeResponse__Input, RangeResponse__Output as _etcdserverpb_RangeResponse__Output } from '../etcdserverpb/RangeResponse.js';

export interface RangeStreamResponse__Input {
  'range_response'?: (_etcdserverpb_RangeResponse__Input | null);
}

export interface RangeStreamResponse__Output {
  'range_response': (_etcdserverpb_RangeResponse__Output | null);
}
