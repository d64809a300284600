// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';
import type { Long } from '@grpc/proto-loader';

export interface AuthStatusResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'enabled'?: (boolean);
  'authRevision'?: (number | string | Long);
}

export interface AuthStatusResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'enabled': (boolean);
  'authRevision': (string);
}
