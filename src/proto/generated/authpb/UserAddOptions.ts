// Original file: src/proto/authpb/auth.proto


export interface UserAddOptions__Input {
  'no_password'?: (boolean);
}

export interface UserAddOptions__Output {
  'no_password': (boolean);
}
