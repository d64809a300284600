// Original file: src/proto/etcdserverpb/rpc.proto

import type { MethodDefinition } from '@grpc/proto-loader'
import type { AlarmRequest__Input as _etcdserverpb_AlarmRequest__Input, AlarmRequest__Output as _etcdserverpb_AlarmRequest__Output } from '../etcdserverpb/AlarmRequest.js';
import type { AlarmResponse__Input as _etcdserverpb_AlarmResponse__Input, AlarmResponse__Output as _etcdserverpb_AlarmResponse__Output } from '../etcdserverpb/AlarmResponse.js';
import type { DefragmentRequest__Input as _etcdserverpb_DefragmentRequest__Input, DefragmentRequest__Output as _etcdserverpb_DefragmentRequest__Output } from '../etcdserverpb/DefragmentRequest.js';
import type { DefragmentResponse__Input as _etcdserverpb_DefragmentResponse__Input, DefragmentResponse__Output as _etcdserverpb_DefragmentResponse__Output } from '../etcdserverpb/DefragmentResponse.js';
import type { DowngradeRequest__Input as _etcdserverpb_DowngradeRequest__Input, DowngradeRequest__Output as _etcdserverpb_DowngradeRequest__Output } from '../etcdserverpb/DowngradeRequest.js';
import type { DowngradeResponse__Input as _etcdserverpb_DowngradeResponse__Input, DowngradeResponse__Output as _etcdserverpb_DowngradeResponse__Output } from '../etcdserverpb/DowngradeResponse.js';
import type { HashKVRequest__Input as _etcdserverpb_HashKVRequest__Input, HashKVRequest__Output as _etcdserverpb_HashKVRequest__Output } from '../etcdserverpb/HashKVRequest.js';
import type { HashKVResponse__Input as _etcdserverpb_HashKVResponse__Input, HashKVResponse__Output as _etcdserverpb_HashKVResponse__Output } from '../etcdserverpb/HashKVResponse.js';
import type { HashRequest__Input as _etcdserverpb_HashRequest__Input, HashRequest__Output as _etcdserverpb_HashRequest__Output } from '../etcdserverpb/HashRequest.js';
import type { HashResponse__Input as _etcdserverpb_HashResponse__Input, HashResponse__Output as _etcdserverpb_HashResponse__Output } from '../etcdserverpb/HashResponse.js';
import type { MoveLeaderRequest__Input as _etcdserverpb_MoveLeaderRequest__Input, MoveLeaderRequest__Output as _etcdserverpb_MoveLeaderRequest__Output } from '../etcdserverpb/MoveLeaderRequest.js';
import type { MoveLeaderResponse__Input as _etcdserverpb_MoveLeaderResponse__Input, MoveLeaderResponse__Output as _etcdserverpb_MoveLeaderResponse__Output } from '../etcdserverpb/MoveLeaderResponse.js';
import type { SnapshotRequest__Input as _etcdserverpb_SnapshotRequest__Input, SnapshotRequest__Output as _etcdserverpb_SnapshotRequest__Output } from '../etcdserverpb/SnapshotRequest.js';
import type { SnapshotResponse__Input as _etcdserverpb_SnapshotResponse__Input, SnapshotResponse__Output as _etcdserverpb_SnapshotResponse__Output } from '../etcdserverpb/SnapshotResponse.js';
import type { StatusRequest__Input as _etcdserverpb_StatusRequest__Input, StatusRequest__Output as _etcdserverpb_StatusRequest__Output } from '../etcdserverpb/StatusRequest.js';
import type { StatusResponse__Input as _etcdserverpb_StatusResponse__Input, StatusResponse__Output as _etcdserverpb_StatusResponse__Output } from '../etcdserverpb/StatusResponse.js';

export interface MaintenanceDefinition {
  Alarm: MethodDefinition<_etcdserverpb_AlarmRequest__Input, _etcdserverpb_AlarmResponse__Input, _etcdserverpb_AlarmRequest__Output, _etcdserverpb_AlarmResponse__Output>
  Defragment: MethodDefinition<_etcdserverpb_DefragmentRequest__Input, _etcdserverpb_DefragmentResponse__Input, _etcdserverpb_DefragmentRequest__Output, _etcdserverpb_DefragmentResponse__Output>
  Downgrade: MethodDefinition<_etcdserverpb_DowngradeRequest__Input, _etcdserverpb_DowngradeResponse__Input, _etcdserverpb_DowngradeRequest__Output, _etcdserverpb_DowngradeResponse__Output>
  Hash: MethodDefinition<_etcdserverpb_HashRequest__Input, _etcdserverpb_HashResponse__Input, _etcdserverpb_HashRequest__Output, _etcdserverpb_HashResponse__Output>
  HashKV: MethodDefinition<_etcdserverpb_HashKVRequest__Input, _etcdserverpb_HashKVResponse__Input, _etcdserverpb_HashKVRequest__Output, _etcdserverpb_HashKVResponse__Output>
  MoveLeader: MethodDefinition<_etcdserverpb_MoveLeaderRequest__Input, _etcdserverpb_MoveLeaderResponse__Input, _etcdserverpb_MoveLeaderRequest__Output, _etcdserverpb_MoveLeaderResponse__Output>
  Snapshot: MethodDefinition<_etcdserverpb_SnapshotRequest__Input, _etcdserverpb_SnapshotResponse__Input, _etcdserverpb_SnapshotRequest__Output, _etcdserverpb_SnapshotResponse__Output>
  Status: MethodDefinition<_etcdserverpb_StatusRequest__Input, _etcdserverpb_StatusResponse__Input, _etcdserverpb_StatusRequest__Output, _etcdserverpb_StatusResponse__Output>
}
