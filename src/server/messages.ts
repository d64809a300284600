/**
 * etcd's gRPC messages (etcdserverpb, mvccpb, authpb, v3lockpb, v3electionpb) exactly as `@grpc/proto-loader`
 * hands them to JavaScript with `keepCase: true, longs: String, enums: String, defaults: true, oneofs: true`:
 *  - field names are the proto's own (snake_case, or `ID`/`TTL`/`dbSize` where the proto says so);
 *  - int64/uint64 are decimal strings, uint32 are numbers, bytes are Buffers, enums are upstream names;
 *  - every scalar and repeated field is present in a decoded message (zero values); an unset message
 *    field is `null`; a oneof shows only its set member plus a discriminator naming it.
 *
 * The types are derived from the ones proto-loader-gen-types generates from our protos (src/proto/generated, made
 * by `npm run gen-types` and checked fresh by test/proto/generated_types.test.ts), so a field added to or
 * renamed in a .proto reaches every user of these names. Where our form differs from the generated one, it
 * does on purpose, and the comment where the difference is made says why.
 *
 * Responses (what the services return) are the generated `X__Output` form, narrowed where the services
 * always set what the proto leaves nullable (`header` above all). Requests are the generated permissive
 * form `X__Input` made our own by RequestOf below: typed leniently, the way protobuf decoding treats a
 * missing field (every field optional, meaning its zero value). At runtime a string in a bytes field is
 * read as base64, as protobufjs does.
 */
// The generated types' own module, not src/proto's index: the index also holds the loader, whose grpc-js
// types would then reach the root entry point's declarations through this namespace.
import type * as pb from '../proto/generated/index.js';

/**
 * int64/uint64 as a request may carry it: what proto-loader decodes (a decimal string), a number, or an
 * exact bigint. Not protobufjs's Long, which the generated input types allow: convert.ts does not read it,
 * and bigint is how the rest of etcdsim carries 64-bit values.
 * @public
 */
export type Int64Input = string | number | bigint;
/**
 * bytes as a request may carry them (a Buffer is a Uint8Array). The generated input types also allow a
 * string, which protobufjs reads as base64; typing it out keeps `key: 'foo'` (meant as UTF-8) from compiling.
 * @public
 */
export type BytesInput = Uint8Array;

/**
 * Our request form of a field whose type the generated permissive form (`X__Input`) gives as `V`, tried in
 * this order (a message without fields, `{}`, would match every later test): repeated → a readonly array
 * (the services never write into a request); a message → its RequestOf, null still meaning unset; int64
 * (`number | string | Long`) → Int64Input; bytes (`Buffer | Uint8Array | string`) → BytesInput; an enum
 * (its names and numbers) → its names or any number, since proto-loader leaves a value it does not know
 * as a number and etcd's Go code takes any int32 there (the services then treat it as etcd does); other
 * scalars (bool, string, uint32, a oneof's discriminator) as they are.
 */
type RequestField<V> = [V] extends [readonly (infer E)[]]
  ? readonly RequestField<E>[]
  : [V] extends [object | null]
    ? RequestOf<NonNullable<V>> | Extract<V, null>
    : number extends V
      ? string extends V
        ? Int64Input
        : V
      : Uint8Array extends V
        ? BytesInput
        : [Extract<V, number>] extends [never]
          ? V
          : Exclude<V, number> | number;

/**
 * The members of T's oneofs: the names its discriminators (the virtual fields `oneofs: true` adds, such
 * as RequestOp's `request`) can take.
 */
type OneofMember<T> = { [K in keyof T]-?: Exclude<T[K], undefined> extends keyof T ? Exclude<T[K], undefined> : never }[keyof T];

/**
 * Our request form of a message, from its generated permissive type T (`X__Input`): every field optional
 * and allowed to be `undefined` (under exactOptionalPropertyTypes, so `{ key, range_end }` with range_end
 * unset is a request), each field as RequestField says. A oneof member that is a message is set or
 * absent, never null: a decoded request never carries a null member, and the services pick the member
 * that is set by `!== undefined` when the discriminator is absent (a hand-built request). A message
 * without fields is any object.
 */
type RequestOf<T> = [keyof T] extends [never]
  ? object
  : {
      [K in keyof T]?:
        | (K extends OneofMember<T> ? Exclude<RequestField<Exclude<T[K], undefined>>, null> : RequestField<Exclude<T[K], undefined>>)
        | undefined;
    };

/**
 * A response in which the fields `K`, which the proto has and the services leave out, are optional: they
 * came with later etcd releases than the ones the simulator answers as (an absent field is its zero value
 * on the wire), and a client reading a real etcd's answer may find them.
 */
type WithLaterFields<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;

/** @public */
export type SortOrder = pb._etcdserverpb_RangeRequest_SortOrder__Output;
/** @public */
export type SortTarget = pb._etcdserverpb_RangeRequest_SortTarget__Output;
/** @public */
export type CompareResult = pb._etcdserverpb_Compare_CompareResult__Output;
/** @public */
export type CompareTarget = pb._etcdserverpb_Compare_CompareTarget__Output;
/** @public */
export type EventType = pb._mvccpb_Event_EventType__Output;
/** @public */
export type FilterType = pb._etcdserverpb_WatchCreateRequest_FilterType__Output;
/** @public */
export type AlarmAction = pb._etcdserverpb_AlarmRequest_AlarmAction__Output;
/** @public */
export type AlarmType = pb.AlarmType__Output;

// ---------------------------------------------------------------------------------------------------
// Common

/** @public */
export type ResponseHeader = pb.ResponseHeader__Output;

/** mvccpb.KeyValue. @public */
export type KeyValue = pb.KeyValue__Output;

/** mvccpb.Event. etcd sets `kv` on every event (after a delete: the key and the deleting revision). @public */
export interface Event extends pb.Event__Output {
  kv: KeyValue;
}

// ---------------------------------------------------------------------------------------------------
// KV
//
// Every response below but three (Defragment, Alarm, MoveLeader) narrows `header` to non-null: etcd's
// servers fill it in every answer, and so do ours.

/** @public */
export type RangeRequest = RequestOf<pb.RangeRequest__Input>;

/** @public */
export interface RangeResponse extends pb.RangeResponse__Output {
  header: ResponseHeader;
}

/** @public */
export type PutRequest = RequestOf<pb.PutRequest__Input>;

/** @public */
export interface PutResponse extends pb.PutResponse__Output {
  header: ResponseHeader;
}

/** @public */
export type DeleteRangeRequest = RequestOf<pb.DeleteRangeRequest__Input>;

/** @public */
export interface DeleteRangeResponse extends pb.DeleteRangeResponse__Output {
  header: ResponseHeader;
}

/**
 * Compare. `target_union` names the operand member that is set; when it is absent (a hand-built
 * request) every operand member present is used.
 * @public
 */
export type Compare = RequestOf<pb.Compare__Input>;

/** RequestOp: `request` names the member that is set (absent: the first member present is used). @public */
export type RequestOp = RequestOf<pb.RequestOp__Input>;

/**
 * ResponseOp, written as a union on its discriminator rather than the generated form (every member
 * optional and nullable): the services always set `response` and its member, and a union lets a reader
 * narrow on `response`. TxnResponse extending the generated type checks each arm against the proto.
 * @public
 */
export type ResponseOp =
  | { response: 'response_range'; response_range: RangeResponse }
  | { response: 'response_put'; response_put: PutResponse }
  | { response: 'response_delete_range'; response_delete_range: DeleteRangeResponse }
  | { response: 'response_txn'; response_txn: TxnResponse };

/** @public */
export type TxnRequest = RequestOf<pb.TxnRequest__Input>;

/** @public */
export interface TxnResponse extends pb.TxnResponse__Output {
  header: ResponseHeader;
  responses: ResponseOp[];
}

/** @public */
export type CompactionRequest = RequestOf<pb.CompactionRequest__Input>;

/** @public */
export interface CompactionResponse extends pb.CompactionResponse__Output {
  header: ResponseHeader;
}

// ---------------------------------------------------------------------------------------------------
// Watch

/** @public */
export type WatchCreateRequest = RequestOf<pb.WatchCreateRequest__Input>;
/** @public */
export type WatchCancelRequest = RequestOf<pb.WatchCancelRequest__Input>;
/** @public */
export type WatchProgressRequest = RequestOf<pb.WatchProgressRequest__Input>;

/** WatchRequest: `request_union` names the member that is set (absent: the first member present). @public */
export type WatchRequest = RequestOf<pb.WatchRequest__Input>;

/** @public */
export interface WatchResponse extends pb.WatchResponse__Output {
  header: ResponseHeader;
  events: Event[];
}

// ---------------------------------------------------------------------------------------------------
// Lease

/** @public */
export type LeaseGrantRequest = RequestOf<pb.LeaseGrantRequest__Input>;

/** @public */
export interface LeaseGrantResponse extends pb.LeaseGrantResponse__Output {
  header: ResponseHeader;
}

/** @public */
export type LeaseRevokeRequest = RequestOf<pb.LeaseRevokeRequest__Input>;

/** @public */
export interface LeaseRevokeResponse extends pb.LeaseRevokeResponse__Output {
  header: ResponseHeader;
}

/** @public */
export type LeaseKeepAliveRequest = RequestOf<pb.LeaseKeepAliveRequest__Input>;

/** @public */
export interface LeaseKeepAliveResponse extends pb.LeaseKeepAliveResponse__Output {
  header: ResponseHeader;
}

/** @public */
export type LeaseTimeToLiveRequest = RequestOf<pb.LeaseTimeToLiveRequest__Input>;

/** @public */
export interface LeaseTimeToLiveResponse extends pb.LeaseTimeToLiveResponse__Output {
  header: ResponseHeader;
}

/** @public */
export type LeaseLeasesRequest = RequestOf<pb.LeaseLeasesRequest__Input>;

/** @public */
export type LeaseStatus = pb.LeaseStatus__Output;

/** @public */
export interface LeaseLeasesResponse extends pb.LeaseLeasesResponse__Output {
  header: ResponseHeader;
}

// ---------------------------------------------------------------------------------------------------
// Maintenance

/** @public */
export type StatusRequest = RequestOf<pb.StatusRequest__Input>;

/** storageVersion, dbSizeQuota and downgradeInfo are etcd 3.6's: optional (see WithLaterFields). @public */
export interface StatusResponse extends WithLaterFields<pb.StatusResponse__Output, 'storageVersion' | 'dbSizeQuota' | 'downgradeInfo'> {
  header: ResponseHeader;
}

/** @public */
export type HashKVRequest = RequestOf<pb.HashKVRequest__Input>;

/**
 * HashKVResponse: `hash` is a uint32, a number; `hash_revision` is the revision the hash covers
 * (etcd 3.5.5+; '0', i.e. absent, as 3.4).
 * @public
 */
export interface HashKVResponse extends pb.HashKVResponse__Output {
  header: ResponseHeader;
}

/** @public */
export type DefragmentRequest = RequestOf<pb.DefragmentRequest__Input>;

/** etcd returns no header here (`header: null`), observed on 3.4.23. @public */
export type DefragmentResponse = pb.DefragmentResponse__Output;

/** @public */
export type AlarmRequest = RequestOf<pb.AlarmRequest__Input>;

/** @public */
export type AlarmMember = pb.AlarmMember__Output;

/** With no alarm raised etcd answers no header (`header: null`), observed on 3.4.23. @public */
export type AlarmResponse = pb.AlarmResponse__Output;

/** @public */
export type SnapshotRequest = RequestOf<pb.SnapshotRequest__Input>;

/**
 * `version` (the storage version of the snapshot) is etcd 3.6's: optional (see WithLaterFields). `header` is
 * null: etcd's Snapshot sends none.
 * @public
 */
export type SnapshotResponse = WithLaterFields<pb.SnapshotResponse__Output, 'version'>;

// ---------------------------------------------------------------------------------------------------
// Cluster

/** @public */
export type MemberListRequest = RequestOf<pb.MemberListRequest__Input>;

/** @public */
export type Member = pb.Member__Output;

/** etcd's cluster server fills cluster_id, member_id and raft_term but not revision ("0"). @public */
export interface MemberListResponse extends pb.MemberListResponse__Output {
  header: ResponseHeader;
}

/** @public */
export type MemberAddRequest = RequestOf<pb.MemberAddRequest__Input>;

/** @public */
export interface MemberAddResponse extends pb.MemberAddResponse__Output {
  header: ResponseHeader;
}

/** @public */
export type MemberRemoveRequest = RequestOf<pb.MemberRemoveRequest__Input>;

/** @public */
export interface MemberRemoveResponse extends pb.MemberRemoveResponse__Output {
  header: ResponseHeader;
}

/** @public */
export type MemberUpdateRequest = RequestOf<pb.MemberUpdateRequest__Input>;

/** @public */
export interface MemberUpdateResponse extends pb.MemberUpdateResponse__Output {
  header: ResponseHeader;
}

/** @public */
export type MemberPromoteRequest = RequestOf<pb.MemberPromoteRequest__Input>;

/** @public */
export interface MemberPromoteResponse extends pb.MemberPromoteResponse__Output {
  header: ResponseHeader;
}

/** @public */
export type MoveLeaderRequest = RequestOf<pb.MoveLeaderRequest__Input>;

/** etcd answers a MoveLeader to the leader itself with an empty response: no header. @public */
export type MoveLeaderResponse = pb.MoveLeaderResponse__Output;

/** @public */
export type HashRequest = RequestOf<pb.HashRequest__Input>;

/** HashResponse: `hash` is a uint32, a number. @public */
export interface HashResponse extends pb.HashResponse__Output {
  header: ResponseHeader;
}

// ---------------------------------------------------------------------------------------------------
// Auth (etcdserverpb.Auth, authpb)

/** @public */
export type PermissionType = pb._authpb_Permission_Type__Output;

/** authpb.Permission. @public */
export type Permission = pb.Permission__Output;

/** authpb.Permission as a request (AuthRoleGrantPermissionRequest.perm) carries it. @public */
export type PermissionInput = RequestOf<pb.Permission__Input>;

/** @public */
export type AuthEnableRequest = RequestOf<pb.AuthEnableRequest__Input>;
/** @public */
export type AuthDisableRequest = RequestOf<pb.AuthDisableRequest__Input>;
/** @public */
export type AuthStatusRequest = RequestOf<pb.AuthStatusRequest__Input>;
/** @public */
export type AuthUserListRequest = RequestOf<pb.AuthUserListRequest__Input>;
/** @public */
export type AuthRoleListRequest = RequestOf<pb.AuthRoleListRequest__Input>;
/** @public */
export type AuthenticateRequest = RequestOf<pb.AuthenticateRequest__Input>;
/** @public */
export type AuthUserAddRequest = RequestOf<pb.AuthUserAddRequest__Input>;
/** @public */
export type AuthUserGetRequest = RequestOf<pb.AuthUserGetRequest__Input>;
/** @public */
export type AuthUserDeleteRequest = RequestOf<pb.AuthUserDeleteRequest__Input>;
/** @public */
export type AuthUserChangePasswordRequest = RequestOf<pb.AuthUserChangePasswordRequest__Input>;
/** @public */
export type AuthUserGrantRoleRequest = RequestOf<pb.AuthUserGrantRoleRequest__Input>;
/** @public */
export type AuthUserRevokeRoleRequest = RequestOf<pb.AuthUserRevokeRoleRequest__Input>;
/** @public */
export type AuthRoleAddRequest = RequestOf<pb.AuthRoleAddRequest__Input>;
/** @public */
export type AuthRoleGetRequest = RequestOf<pb.AuthRoleGetRequest__Input>;
/** @public */
export type AuthRoleDeleteRequest = RequestOf<pb.AuthRoleDeleteRequest__Input>;
/** @public */
export type AuthRoleGrantPermissionRequest = RequestOf<pb.AuthRoleGrantPermissionRequest__Input>;
/** @public */
export type AuthRoleRevokePermissionRequest = RequestOf<pb.AuthRoleRevokePermissionRequest__Input>;

/**
 * The response of every auth call that returns only a header (AuthEnable, AuthDisable, UserAdd, ... all
 * have this one field in the proto): one name for all of them, derived from AuthEnableResponse.
 * @public
 */
export interface AuthHeaderResponse extends pb.AuthEnableResponse__Output {
  header: ResponseHeader;
}

/** @public */
export interface AuthStatusResponse extends pb.AuthStatusResponse__Output {
  header: ResponseHeader;
}

/** @public */
export interface AuthenticateResponse extends pb.AuthenticateResponse__Output {
  header: ResponseHeader;
}

/** @public */
export interface AuthUserGetResponse extends pb.AuthUserGetResponse__Output {
  header: ResponseHeader;
}

/** @public */
export interface AuthUserListResponse extends pb.AuthUserListResponse__Output {
  header: ResponseHeader;
}

/** @public */
export interface AuthRoleGetResponse extends pb.AuthRoleGetResponse__Output {
  header: ResponseHeader;
}

/** @public */
export interface AuthRoleListResponse extends pb.AuthRoleListResponse__Output {
  header: ResponseHeader;
}

// ---------------------------------------------------------------------------------------------------
// Lock (v3lockpb.Lock) and Election (v3electionpb.Election)

/** @public */
export type LockRequest = RequestOf<pb.LockRequest__Input>;

/** @public */
export interface LockResponse extends pb.LockResponse__Output {
  header: ResponseHeader;
}

/** @public */
export type UnlockRequest = RequestOf<pb.UnlockRequest__Input>;

/** @public */
export interface UnlockResponse extends pb.UnlockResponse__Output {
  header: ResponseHeader;
}

/** v3electionpb.LeaderKey: one leadership (election name, candidate key, its create revision, its lease). @public */
export type LeaderKey = pb.LeaderKey__Output;

/** A LeaderKey as a request carries it (a CampaignResponse's `leader` passes as it is). @public */
export type LeaderKeyInput = RequestOf<pb.LeaderKey__Input>;

/** @public */
export type CampaignRequest = RequestOf<pb.CampaignRequest__Input>;

/** `leader` is always set: a Campaign answers only once the candidate leads. @public */
export interface CampaignResponse extends pb.CampaignResponse__Output {
  header: ResponseHeader;
  leader: LeaderKey;
}

/** @public */
export type ProclaimRequest = RequestOf<pb.ProclaimRequest__Input>;

/** @public */
export interface ProclaimResponse extends pb.ProclaimResponse__Output {
  header: ResponseHeader;
}

/** @public */
export type LeaderRequest = RequestOf<pb.LeaderRequest__Input>;

/** `kv` is always set: with no leader etcd answers an error (ErrElectionNoLeader), not an empty kv. @public */
export interface LeaderResponse extends pb.LeaderResponse__Output {
  header: ResponseHeader;
  kv: KeyValue;
}

/** @public */
export type ResignRequest = RequestOf<pb.ResignRequest__Input>;

/** @public */
export interface ResignResponse extends pb.ResignResponse__Output {
  header: ResponseHeader;
}
