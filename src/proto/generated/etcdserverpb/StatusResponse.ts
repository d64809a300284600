// Original file: src/proto/etcdserverpb/rpc.proto

import type { ResponseHeader__Input as _etcdserverpb_ResponseHeader__Input, ResponseHeader__Output as _etcdserverpb_ResponseHeader__Output } from '../etcdserverpb/ResponseHeader.js';
import type { DowngradeInfo__Input as _etcdserverpb_DowngradeInfo__Input, DowngradeInfo__Output as _etcdserverpb_DowngradeInfo__Output } from '../etcdserverpb/DowngradeInfo.js';
import type { Long } from '@grpc/proto-loader';

export interface StatusResponse__Input {
  'header'?: (_etcdserverpb_ResponseHeader__Input | null);
  'version'?: (string);
  'dbSize'?: (number | string | Long);
  'leader'?: (number | string | Long);
  'raftIndex'?: (number | string | Long);
  'raftTerm'?: (number | string | Long);
  'raftAppliedIndex'?: (number | string | Long);
  'errors'?: (string)[];
  'dbSizeInUse'?: (number | string | Long);
  'isLearner'?: (boolean);
  'storageVersion'?: (string);
  'dbSizeQuota'?: (number | string | Long);
  'downgradeInfo'?: (_etcdserverpb_DowngradeInfo__Input | null);
}

export interface StatusResponse__Output {
  'header': (_etcdserverpb_ResponseHeader__Output | null);
  'version': (string);
  'dbSize': (string);
  'leader': (string);
  'raftIndex': (string);
  'raftTerm': (string);
  'raftAppliedIndex': (string);
  'errors': (string)[];
  'dbSizeInUse': (string);
  'isLearner': (boolean);
  'storageVersion': (string);
  'dbSizeQuota': (string);
  'downgradeInfo': (_etcdserverpb_DowngradeInfo__Output | null);
}
