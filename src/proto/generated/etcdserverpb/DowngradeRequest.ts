// Original file: src/proto/etcdserverpb/rpc.proto


// Original file: src/proto/etcdserverpb/rpc.proto

export const _etcdserverpb_DowngradeRequest_DowngradeAction = {
  VALIDATE: 'VALIDATE',
  ENABLE: 'ENABLE',
  CANCEL: 'CANCEL',
} as const;

export type _etcdserverpb_DowngradeRequest_DowngradeAction__Input =
  | 'VALIDATE'
  | 0
  | 'ENABLE'
  | 1
  | 'CANCEL'
  | 2

export type _etcdserverpb_DowngradeRequest_DowngradeAction__Output = typeof _etcdserverpb_DowngradeRequest_DowngradeAction[keyof typeof _etcdserverpb_DowngradeRequest_DowngradeAction]

export interface DowngradeRequest__Input {
  'action'?: (_etcdserverpb_DowngradeRequest_DowngradeAction__Input);
  'version'?: (string);
}

export interface DowngradeRequest__Output {
  'action': (_etcdserverpb_DowngradeRequest_DowngradeAction__Output);
  'version': (string);
}
