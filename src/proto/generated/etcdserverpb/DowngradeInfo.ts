// Original file: src/proto/etcdserverpb/rpc.proto


export interface DowngradeInfo__Input {
  'enabled'?: (boolean);
  'targetVersion'?: (string);
}

export interface DowngradeInfo__Output {
  'enabled': (boolean);
  'targetVersion': (string);
}
