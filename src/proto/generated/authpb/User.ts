// Original file: src/proto/authpb/auth.proto

import type { UserAddOptions__Input as _authpb_UserAddOptions__Input, UserAddOptions__Output as _authpb_UserAddOptions__Output } from '../authpb/UserAddOptions.js';

export interface User__Input {
  'name'?: (Buffer | Uint8Array | string);
  'password'?: (Buffer | Uint8Array | string);
  'roles'?: (string)[];
  'options'?: (_authpb_UserAddOptions__Input | null);
}

export interface User__Output {
  'name': (Buffer);
  'password': (Buffer);
  'roles': (string)[];
  'options': (_authpb_UserAddOptions__Output | null);
}
