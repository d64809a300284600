// Original file: src/proto/v3lockpb/v3lock.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';

export interface UnlockResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
}

export interface UnlockResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
}
