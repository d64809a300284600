// Original file: src/proto/mvccpb/kv.proto

import type { Long } from '@grpc/proto-loader';

export interface KeyValue__Input {
  'key'?: (Buffer | Uint8Array | string);
  'create_revision'?: (number | string | Long);
  'mod_revision'?: (number | string | Long);
  'version'?: (number | string | Long);
  'value'?: (Buffer | Uint8Array | string);
  'lease'?: (number | string | Long);
}

export interface KeyValue__Output {
  'key': (Buffer);
  'create_revision': (string);
  'mod_revision': (string);
  'version': (string);
  'value': (Buffer);
  'lease': (string);
}
