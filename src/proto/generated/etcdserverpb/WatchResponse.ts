// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';
import type { Event__Input as _mvccpb_Event__Input, Event__Output as _mvccpb_Event__Output } from '../mvccpb/Event.js';
import type { Long } from '@grpc/proto-loader';

export interface WatchResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'watch_id'?: (number | string | Long);
  'created'?: (boolean);
  'canceled'?: (boolean);
  'compact_revision'?: (number | string | Long);
  'cancel_reason'?: (string);
  'fragment'?: (boolean);
  'events'?: (_mvccpb_Event__Input)[];
}

export interface WatchResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'watch_id': (string);
  'created': (boolean);
  'canceled': (boolean);
  'compact_revision': (string);
  'cancel_reason': (string);
  'fragment': (boolean);
  'events': (_mvccpb_Event__Output)[];
}
