// Original file: src/proto/v3lockpb/v3lock.proto

import type { MethodDefinition } from '@grpc/proto-loader'
import type { LockRequest__Input as _v3lockpb_LockRequest__Input, LockRequest__Output as _v3lockpb_LockRequest__Output } from '../v3lockpb/LockRequest.js';
import type { LockResponse__Input as _v3lockpb_LockResponse__Input, LockResponse__Output as _v3lockpb_LockResponse__Output } from '../v3lockpb/LockResponse.js';
import type { UnlockRequest__Input as _v3lockpb_UnlockRequest__Input, UnlockRequest__Output as _v3lockpb_UnlockRequest__Output } from '../v3lockpb/UnlockRequest.js';
import type { UnlockResponse__Input as _v3lockpb_UnlockResponse__Input, UnlockResponse__Output as _v3lockpb_UnlockResponse__Output } from '../v3lockpb/UnlockResponse.js';

export interface LockDefinition {
  Lock: MethodDefinition<_v3lockpb_LockRequest__Input, _v3lockpb_LockResponse__Input, _v3lockpb_LockRequest__Output, _v3lockpb_LockResponse__Output>
  Unlock: MethodDefinition<_v3lockpb_UnlockRequest__Input, _v3lockpb_UnlockResponse__Input, _v3lockpb_UnlockRequest__Output, _v3lockpb_UnlockResponse__Output>
}
