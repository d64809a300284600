// Original file: src/proto/etcdserverpb/rpc.proto


export interface AuthUserChangePasswordRequest__Input {
  'name'?: (string);
  'password'?: (string);
  'hashedPassword'?: (string);
}

export interface AuthUserChangePasswordRequest__Output {
  'name': (string);
  'password': (string);
  'hashedPassword': (string);
}
