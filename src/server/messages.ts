/**
 * etcd's gRPC messages (etcdserverpb, mvccpb) exactly as `@grpc/proto-loader` hands them to JavaScript
 * with `keepCase: true, longs: String, enums: String, defaults: true, oneofs: true`:
 *  - field names are the proto's own (snake_case, or `ID`/`TTL`/`dbSize` where the proto says so);
 *  - int64/uint64 are decimal strings, uint32 are numbers, bytes are Buffers, enums are upstream names;
 *  - every scalar and repeated field is present in a decoded message (zero values); an unset message
 *    field is `null`; a oneof shows only its set member plus a discriminator naming it.
 *
 * Responses (what the services return) have that complete form. Requests are typed leniently, the way
 * protobuf decoding treats a missing field: every field is optional and means its zero value, int64 may
 * also be a number or bigint, and an enum may be its number (proto-loader leaves an enum value it does
 * not know as a number). At runtime a string in a bytes field is read as base64, as protobufjs does.
 */
import type { Buffer } from 'node:buffer';

/** int64/uint64 as a request may carry it. */
export type Int64Input = string | number | bigint;
/** bytes as a request may carry them (a Buffer is a Uint8Array). */
export type BytesInput = Uint8Array;

export type SortOrder = 'NONE' | 'ASCEND' | 'DESCEND';
export type SortTarget = 'KEY' | 'VERSION' | 'CREATE' | 'MOD' | 'VALUE';
export type CompareResult = 'EQUAL' | 'GREATER' | 'LESS' | 'NOT_EQUAL';
export type CompareTarget = 'VERSION' | 'CREATE' | 'MOD' | 'VALUE' | 'LEASE';
export type EventType = 'PUT' | 'DELETE';
export type FilterType = 'NOPUT' | 'NODELETE';
export type AlarmAction = 'GET' | 'ACTIVATE' | 'DEACTIVATE';
export type AlarmType = 'NONE' | 'NOSPACE' | 'CORRUPT';

// ---------------------------------------------------------------------------------------------------
// Common

export interface ResponseHeader {
  cluster_id: string;
  member_id: string;
  revision: string;
  raft_term: string;
}

/** mvccpb.KeyValue. */
export interface KeyValue {
  key: Buffer;
  create_revision: string;
  mod_revision: string;
  version: string;
  value: Buffer;
  lease: string;
}

/** mvccpb.Event. */
export interface Event {
  type: EventType;
  kv: KeyValue;
  prev_kv: KeyValue | null;
}

// ---------------------------------------------------------------------------------------------------
// KV

export interface RangeRequest {
  key?: BytesInput | undefined;
  range_end?: BytesInput | undefined;
  limit?: Int64Input | undefined;
  revision?: Int64Input | undefined;
  sort_order?: SortOrder | number | undefined;
  sort_target?: SortTarget | number | undefined;
  serializable?: boolean | undefined;
  keys_only?: boolean | undefined;
  count_only?: boolean | undefined;
  min_mod_revision?: Int64Input | undefined;
  max_mod_revision?: Int64Input | undefined;
  min_create_revision?: Int64Input | undefined;
  max_create_revision?: Int64Input | undefined;
}

export interface RangeResponse {
  header: ResponseHeader;
  kvs: KeyValue[];
  more: boolean;
  count: string;
}

export interface PutRequest {
  key?: BytesInput | undefined;
  value?: BytesInput | undefined;
  lease?: Int64Input | undefined;
  prev_kv?: boolean | undefined;
  ignore_value?: boolean | undefined;
  ignore_lease?: boolean | undefined;
}

export interface PutResponse {
  header: ResponseHeader;
  prev_kv: KeyValue | null;
}

export interface DeleteRangeRequest {
  key?: BytesInput | undefined;
  range_end?: BytesInput | undefined;
  prev_kv?: boolean | undefined;
}

export interface DeleteRangeResponse {
  header: ResponseHeader;
  deleted: string;
  prev_kvs: KeyValue[];
}

/**
 * Compare. `target_union` names the operand member that is set; when it is absent (a hand-built
 * request) every operand member present is used.
 */
export interface Compare {
  result?: CompareResult | number | undefined;
  target?: CompareTarget | number | undefined;
  key?: BytesInput | undefined;
  range_end?: BytesInput | undefined;
  target_union?: 'version' | 'create_revision' | 'mod_revision' | 'value' | 'lease' | undefined;
  version?: Int64Input | undefined;
  create_revision?: Int64Input | undefined;
  mod_revision?: Int64Input | undefined;
  value?: BytesInput | undefined;
  lease?: Int64Input | undefined;
}

/** RequestOp: `request` names the member that is set (absent: the first member present is used). */
export interface RequestOp {
  request?: 'request_range' | 'request_put' | 'request_delete_range' | 'request_txn' | undefined;
  request_range?: RangeRequest | undefined;
  request_put?: PutRequest | undefined;
  request_delete_range?: DeleteRangeRequest | undefined;
  request_txn?: TxnRequest | undefined;
}

export type ResponseOp =
  | { response: 'response_range'; response_range: RangeResponse }
  | { response: 'response_put'; response_put: PutResponse }
  | { response: 'response_delete_range'; response_delete_range: DeleteRangeResponse }
  | { response: 'response_txn'; response_txn: TxnResponse };

export interface TxnRequest {
  compare?: readonly Compare[] | undefined;
  success?: readonly RequestOp[] | undefined;
  failure?: readonly RequestOp[] | undefined;
}

export interface TxnResponse {
  header: ResponseHeader;
  succeeded: boolean;
  responses: ResponseOp[];
}

export interface CompactionRequest {
  revision?: Int64Input | undefined;
  physical?: boolean | undefined;
}

export interface CompactionResponse {
  header: ResponseHeader;
}

// ---------------------------------------------------------------------------------------------------
// Watch

export interface WatchCreateRequest {
  key?: BytesInput | undefined;
  range_end?: BytesInput | undefined;
  start_revision?: Int64Input | undefined;
  progress_notify?: boolean | undefined;
  filters?: readonly (FilterType | number)[] | undefined;
  prev_kv?: boolean | undefined;
  watch_id?: Int64Input | undefined;
  fragment?: boolean | undefined;
}

export interface WatchCancelRequest {
  watch_id?: Int64Input | undefined;
}

export type WatchProgressRequest = Record<string, never>;

/** WatchRequest: `request_union` names the member that is set (absent: the first member present). */
export interface WatchRequest {
  request_union?: 'create_request' | 'cancel_request' | 'progress_request' | undefined;
  create_request?: WatchCreateRequest | undefined;
  cancel_request?: WatchCancelRequest | undefined;
  progress_request?: WatchProgressRequest | object | undefined;
}

export interface WatchResponse {
  header: ResponseHeader;
  watch_id: string;
  created: boolean;
  canceled: boolean;
  compact_revision: string;
  cancel_reason: string;
  fragment: boolean;
  events: Event[];
}

// ---------------------------------------------------------------------------------------------------
// Lease

export interface LeaseGrantRequest {
  TTL?: Int64Input | undefined;
  ID?: Int64Input | undefined;
}

export interface LeaseGrantResponse {
  header: ResponseHeader;
  ID: string;
  TTL: string;
  error: string;
}

export interface LeaseRevokeRequest {
  ID?: Int64Input | undefined;
}

export interface LeaseRevokeResponse {
  header: ResponseHeader;
}

export interface LeaseKeepAliveRequest {
  ID?: Int64Input | undefined;
}

export interface LeaseKeepAliveResponse {
  header: ResponseHeader;
  ID: string;
  TTL: string;
}

export interface LeaseTimeToLiveRequest {
  ID?: Int64Input | undefined;
  keys?: boolean | undefined;
}

export interface LeaseTimeToLiveResponse {
  header: ResponseHeader;
  ID: string;
  TTL: string;
  grantedTTL: string;
  keys: Buffer[];
}

export type LeaseLeasesRequest = Record<string, never> | object;

export interface LeaseStatus {
  ID: string;
}

export interface LeaseLeasesResponse {
  header: ResponseHeader;
  leases: LeaseStatus[];
}

// ---------------------------------------------------------------------------------------------------
// Maintenance

export type StatusRequest = Record<string, never> | object;

export interface StatusResponse {
  header: ResponseHeader;
  version: string;
  dbSize: string;
  leader: string;
  raftIndex: string;
  raftTerm: string;
  raftAppliedIndex: string;
  errors: string[];
  dbSizeInUse: string;
  isLearner: boolean;
}

export interface HashKVRequest {
  revision?: Int64Input | undefined;
}

export interface HashKVResponse {
  header: ResponseHeader;
  /** uint32: a number, not a string. */
  hash: number;
  compact_revision: string;
  /** The revision the hash covers (etcd 3.5.5+; '0', i.e. absent, as 3.4). */
  hash_revision: string;
}

export type DefragmentRequest = Record<string, never> | object;

/** etcd returns no header here (`header: null`), observed on 3.4.23. */
export interface DefragmentResponse {
  header: ResponseHeader | null;
}

export interface AlarmRequest {
  action?: AlarmAction | number | undefined;
  memberID?: Int64Input | undefined;
  alarm?: AlarmType | number | undefined;
}

export interface AlarmMember {
  memberID: string;
  alarm: AlarmType;
}

/** With no alarm raised etcd answers no header (`header: null`), observed on 3.4.23. */
export interface AlarmResponse {
  header: ResponseHeader | null;
  alarms: AlarmMember[];
}

export type SnapshotRequest = Record<string, never> | object;

export interface SnapshotResponse {
  header: ResponseHeader;
  remaining_bytes: string;
  blob: Buffer;
}

// ---------------------------------------------------------------------------------------------------
// Cluster

export interface MemberListRequest {
  linearizable?: boolean | undefined;
}

export interface Member {
  ID: string;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
}

/** etcd's cluster server fills cluster_id, member_id and raft_term but not revision ("0"). */
export interface MemberListResponse {
  header: ResponseHeader;
  members: Member[];
}

export interface MemberAddRequest {
  peerURLs?: readonly string[] | undefined;
  isLearner?: boolean | undefined;
}

export interface MemberAddResponse {
  header: ResponseHeader;
  member: Member | null;
  members: Member[];
}

export interface MemberRemoveRequest {
  ID?: Int64Input | undefined;
}

export interface MemberRemoveResponse {
  header: ResponseHeader;
  members: Member[];
}

export interface MemberUpdateRequest {
  ID?: Int64Input | undefined;
  peerURLs?: readonly string[] | undefined;
}

export interface MemberUpdateResponse {
  header: ResponseHeader;
  members: Member[];
}

export interface MemberPromoteRequest {
  ID?: Int64Input | undefined;
}

export interface MemberPromoteResponse {
  header: ResponseHeader;
  members: Member[];
}

export interface MoveLeaderRequest {
  targetID?: Int64Input | undefined;
}

/** etcd answers a MoveLeader to the leader itself with an empty response: no header. */
export interface MoveLeaderResponse {
  header: ResponseHeader | null;
}

export type HashRequest = Record<string, never>;

export interface HashResponse {
  header: ResponseHeader;
  /** uint32. */
  hash: number;
}

// ---------------------------------------------------------------------------------------------------
// Auth (etcdserverpb.Auth, authpb)

export type PermissionType = 'READ' | 'WRITE' | 'READWRITE';

/** authpb.Permission. */
export interface Permission {
  permType: PermissionType;
  key: Buffer;
  range_end: Buffer;
}

export interface PermissionInput {
  permType?: PermissionType | number | undefined;
  key?: BytesInput | undefined;
  range_end?: BytesInput | undefined;
}

export type AuthEnableRequest = Record<string, never> | object;
export type AuthDisableRequest = Record<string, never> | object;
export type AuthStatusRequest = Record<string, never> | object;
export type AuthUserListRequest = Record<string, never> | object;
export type AuthRoleListRequest = Record<string, never> | object;

export interface AuthenticateRequest {
  name?: string | undefined;
  password?: string | undefined;
}

export interface AuthUserAddRequest {
  name?: string | undefined;
  password?: string | undefined;
  options?: { no_password?: boolean | undefined } | null | undefined;
  hashedPassword?: string | undefined;
}

export interface AuthUserGetRequest {
  name?: string | undefined;
}

export interface AuthUserDeleteRequest {
  name?: string | undefined;
}

export interface AuthUserChangePasswordRequest {
  name?: string | undefined;
  password?: string | undefined;
  hashedPassword?: string | undefined;
}

export interface AuthUserGrantRoleRequest {
  user?: string | undefined;
  role?: string | undefined;
}

export interface AuthUserRevokeRoleRequest {
  name?: string | undefined;
  role?: string | undefined;
}

export interface AuthRoleAddRequest {
  name?: string | undefined;
}

export interface AuthRoleGetRequest {
  role?: string | undefined;
}

export interface AuthRoleDeleteRequest {
  role?: string | undefined;
}

export interface AuthRoleGrantPermissionRequest {
  name?: string | undefined;
  perm?: PermissionInput | null | undefined;
}

export interface AuthRoleRevokePermissionRequest {
  role?: string | undefined;
  key?: BytesInput | undefined;
  range_end?: BytesInput | undefined;
}

/** The response of every auth call that returns only a header. */
export interface AuthHeaderResponse {
  header: ResponseHeader;
}

export interface AuthStatusResponse {
  header: ResponseHeader;
  enabled: boolean;
  authRevision: string;
}

export interface AuthenticateResponse {
  header: ResponseHeader;
  token: string;
}

export interface AuthUserGetResponse {
  header: ResponseHeader;
  roles: string[];
}

export interface AuthUserListResponse {
  header: ResponseHeader;
  users: string[];
}

export interface AuthRoleGetResponse {
  header: ResponseHeader;
  perm: Permission[];
}

export interface AuthRoleListResponse {
  header: ResponseHeader;
  roles: string[];
}

// ---------------------------------------------------------------------------------------------------
// Lock (v3lockpb.Lock) and Election (v3electionpb.Election)

export interface LockRequest {
  name?: BytesInput | undefined;
  lease?: Int64Input | undefined;
}

export interface LockResponse {
  header: ResponseHeader;
  key: Buffer;
}

export interface UnlockRequest {
  key?: BytesInput | undefined;
}

export interface UnlockResponse {
  header: ResponseHeader;
}

/** v3electionpb.LeaderKey: one leadership (election name, candidate key, its create revision, its lease). */
export interface LeaderKey {
  name: Buffer;
  key: Buffer;
  rev: string;
  lease: string;
}

/** A LeaderKey as a request carries it (a CampaignResponse's `leader` passes as it is). */
export interface LeaderKeyInput {
  name?: BytesInput | undefined;
  key?: BytesInput | undefined;
  rev?: Int64Input | undefined;
  lease?: Int64Input | undefined;
}

export interface CampaignRequest {
  name?: BytesInput | undefined;
  lease?: Int64Input | undefined;
  value?: BytesInput | undefined;
}

export interface CampaignResponse {
  header: ResponseHeader;
  leader: LeaderKey;
}

export interface ProclaimRequest {
  leader?: LeaderKeyInput | null | undefined;
  value?: BytesInput | undefined;
}

export interface ProclaimResponse {
  header: ResponseHeader;
}

export interface LeaderRequest {
  name?: BytesInput | undefined;
}

export interface LeaderResponse {
  header: ResponseHeader;
  kv: KeyValue;
}

export interface ResignRequest {
  leader?: LeaderKeyInput | null | undefined;
}

export interface ResignResponse {
  header: ResponseHeader;
}
