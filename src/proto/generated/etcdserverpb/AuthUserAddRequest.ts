// Original file: src/proto/etcdserverpb/rpc.proto

import type { UserAddOptions__Input as _authpb_UserAddOptions__Input, UserAddOptions__Output as _authpb_UserAddOptions__Output } from '../authpb/UserAddOptions.js';

export interface AuthUserAddRequest__Input {
  'name'?: (string);
  'password'?: (string);
  'options'?: (_authpb_UserAddOptions__Input | null);
  'hashedPassword'?: (string);
}

export interface AuthUserAddRequest__Output {
  'name': (string);
  'password': (string);
  'options': (_authpb_UserAddOptions__Output | null);
  'hashedPassword': (string);
}
