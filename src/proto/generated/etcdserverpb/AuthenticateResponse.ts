// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';

export interface AuthenticateResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'token'?: (string);
}

export interface AuthenticateResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'token': (string);
}
