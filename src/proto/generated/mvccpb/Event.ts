// Original file: src/proto/mvccpb/kv.proto

import type { KeyValue__Input as _mvccpb_KeyValue__Input, KeyValue__Output as _mvccpb_KeyValue__Output } from '../mvccpb/KeyValue.js';

// Original file: src/proto/mvccpb/kv.proto

export const _mvccpb_Event_EventType = {
  PUT: 'PUT',
  DELETE: 'DELETE',
} as const;

export type _mvccpb_Event_EventType__Input =
  | 'PUT'
  | 0
  | 'DELETE'
  | 1

export type _mvccpb_Event_EventType__Output = typeof _mvccpb_Event_EventType[keyof typeof _mvccpb_Event_EventType]

export interface Event__Input {
  'type'?: (_mvccpb_Event_EventType__Input);
  'kv'?: (_mvccpb_KeyValue__Input | null);
  'prev_kv'?: (_mvccpb_KeyValue__Input | null);
}

export interface Event__Output {
  'type': (_mvccpb_Event_EventType__Output);
  'kv': (_mvccpb_KeyValue__Output | null);
  'prev_kv': (_mvccpb_KeyValue__Output | null);
}
