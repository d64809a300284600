// Original file: src/proto/authpb/auth.proto

import type { Permission__Input as _authpb_Permission__Input, Permission__Output as _authpb_Permission__Output } from '../authpb/Permission.js';

export interface Role__Input {
  'name'?: (Buffer | Uint8Array | string);
  'keyPermission'?: (_authpb_Permission__Input)[];
}

export interface Role__Output {
  'name': (Buffer);
  'keyPermission': (_authpb_Permission__Output)[];
}
