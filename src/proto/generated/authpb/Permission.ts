// Original file: src/proto/authpb/auth.proto


// Original file: src/proto/authpb/auth.proto

export const _authpb_Permission_Type = {
  READ: 'READ',
  WRITE: 'WRITE',
  READWRITE: 'READWRITE',
} as const;

export type _authpb_Permission_Type__Input =
  | 'READ'
  | 0
  | 'WRITE'
  | 1
  | 'READWRITE'
  | 2

export type _authpb_Permission_Type__Output = typeof _authpb_Permission_Type[keyof typeof _authpb_Permission_Type]

export interface Permission__Input {
  'permType'?: (_authpb_Permission_Type__Input);
  'key'?: (Buffer | Uint8Array | string);
  'range_end'?: (Buffer | Uint8Array | string);
}

export interface Permission__Output {
  'permType': (_authpb_Permission_Type__Output);
  'key': (Buffer);
  'range_end': (Buffer);
}
