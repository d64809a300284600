/**
 * The routes of etcd's gRPC gateway: which path under /v3/ calls which method of the member's services,
 * with which request and response messages (json.ts reads and writes them by these names). The paths are
 * etcd's `google.api.http` bindings; the rest is derived from our protos' service descriptors (src/proto)
 * and the member's method of the same name, so a method added to a .proto and its service is routed once
 * its path is named here. gateway.ts serves what a route says.
 */
import { grpcError, type Awaitable, type BidiStream, type CallContext, type FlowControl, type GrpcError, type MemberServices, type MemberView, type StreamHold, type WaitingCallContext } from '../server/index.js';
import { GrpcCode } from '../etcd/index.js';
import { callNameOf, etcdServiceDefinition, SERVICE_PACKAGES, type EtcdServiceName } from '../proto/index.js';

type Unary = (s: MemberView, req: never, ctx: CallContext) => unknown;
type ServerStream = (s: MemberView, req: never, ctx: CallContext) => Awaitable<Iterable<unknown | StreamHold>>;

/** A bidirectional call of the services (WatchCall, KeepAliveCall) as the gateway drives it. */
export type BidiCall = BidiStream<never, unknown> & FlowControl & { abort(err?: GrpcError): void; flush(): number };

export interface Route {
  /** The gRPC method it calls (`KV/Range`, `v3lockpb.Lock/Lock`). */
  readonly method: string;
  /** The request and response messages' full names (`etcdserverpb.RangeRequest`). */
  readonly requestType: string;
  readonly responseType: string;
  readonly unary?: Unary | undefined;
  readonly serverStream?: ServerStream | undefined;
  readonly bidi?: ((s: MemberView, ctx: CallContext) => BidiCall) | undefined;
  /** A server-streaming method whose responses come from a stream call of the services (Observe). */
  readonly streamCall?: ((s: MemberView, req: never, ctx: CallContext) => BidiCall) | undefined;
  /** A unary method that waits (Lock, Campaign): the call's signal aborts when the client goes away. */
  readonly waits?: ((s: MemberView, req: never, ctx: WaitingCallContext) => Promise<unknown>) | undefined;
  /** Releases that serve this route (default: all). */
  readonly since?: '3.5' | undefined;
}

/**
 * The gateway's paths under /v3/ and the method each calls (`Service/Method`; Lock's and Election's with
 * their package): the `google.api.http` bindings of etcd's rpc.proto, v3lock.proto and v3election.proto,
 * which our protos leave out so that they compile without Google's annotations. Everything else of a route
 * — its messages, whether it streams, the member's method it calls — comes from the proto's descriptors
 * (routeOf). LeaseRevoke, LeaseTimeToLive and LeaseLeases have a second binding under kv/; Hash and HashKV
 * share maintenance/hash, where etcd's gateway registers Hash first, so Hash answers it and HashKV has no
 * route at all.
 */
const PATHS: ReadonlyArray<readonly [path: string, method: string]> = [
  ['kv/range', 'KV/Range'],
  ['kv/put', 'KV/Put'],
  ['kv/deleterange', 'KV/DeleteRange'],
  ['kv/txn', 'KV/Txn'],
  ['kv/compaction', 'KV/Compact'],
  ['watch', 'Watch/Watch'],
  ['lease/grant', 'Lease/LeaseGrant'],
  ['lease/revoke', 'Lease/LeaseRevoke'],
  ['kv/lease/revoke', 'Lease/LeaseRevoke'],
  ['lease/keepalive', 'Lease/LeaseKeepAlive'],
  ['lease/timetolive', 'Lease/LeaseTimeToLive'],
  ['kv/lease/timetolive', 'Lease/LeaseTimeToLive'],
  ['lease/leases', 'Lease/LeaseLeases'],
  ['kv/lease/leases', 'Lease/LeaseLeases'],
  ['cluster/member/add', 'Cluster/MemberAdd'],
  ['cluster/member/remove', 'Cluster/MemberRemove'],
  ['cluster/member/update', 'Cluster/MemberUpdate'],
  ['cluster/member/list', 'Cluster/MemberList'],
  ['cluster/member/promote', 'Cluster/MemberPromote'],
  ['maintenance/alarm', 'Maintenance/Alarm'],
  ['maintenance/status', 'Maintenance/Status'],
  ['maintenance/defragment', 'Maintenance/Defragment'],
  ['maintenance/hash', 'Maintenance/Hash'],
  ['maintenance/snapshot', 'Maintenance/Snapshot'],
  ['maintenance/transfer-leadership', 'Maintenance/MoveLeader'],
  ['maintenance/downgrade', 'Maintenance/Downgrade'],
  ['auth/enable', 'Auth/AuthEnable'],
  ['auth/disable', 'Auth/AuthDisable'],
  ['auth/status', 'Auth/AuthStatus'],
  ['auth/authenticate', 'Auth/Authenticate'],
  ['auth/user/add', 'Auth/UserAdd'],
  ['auth/user/get', 'Auth/UserGet'],
  ['auth/user/list', 'Auth/UserList'],
  ['auth/user/delete', 'Auth/UserDelete'],
  ['auth/user/changepw', 'Auth/UserChangePassword'],
  ['auth/user/grant', 'Auth/UserGrantRole'],
  ['auth/user/revoke', 'Auth/UserRevokeRole'],
  ['auth/role/add', 'Auth/RoleAdd'],
  ['auth/role/get', 'Auth/RoleGet'],
  ['auth/role/list', 'Auth/RoleList'],
  ['auth/role/delete', 'Auth/RoleDelete'],
  ['auth/role/grant', 'Auth/RoleGrantPermission'],
  ['auth/role/revoke', 'Auth/RoleRevokePermission'],
  ['lock/lock', 'v3lockpb.Lock/Lock'],
  ['lock/unlock', 'v3lockpb.Lock/Unlock'],
  ['election/campaign', 'v3electionpb.Election/Campaign'],
  ['election/proclaim', 'v3electionpb.Election/Proclaim'],
  ['election/leader', 'v3electionpb.Election/Leader'],
  ['election/observe', 'v3electionpb.Election/Observe'],
  ['election/resign', 'v3electionpb.Election/Resign'],
];

/**
 * The methods not called as their kind and name say: Snapshot streams the member's file as it is written
 * (snapshotStream), Lock and Campaign wait (their signal aborts when the client goes), Observe's responses
 * come from a stream call of the services; AuthStatus and Downgrade came with etcd 3.5.
 */
const SERVED_OTHERWISE: Readonly<Record<string, Partial<Route>>> = {
  'Maintenance/Snapshot': { serverStream: (s, r, c) => s.services.maintenance.snapshotStream(r, c) },
  'Maintenance/Downgrade': { since: '3.5' },
  'Auth/AuthStatus': { since: '3.5' },
  'v3lockpb.Lock/Lock': { unary: undefined, waits: (s, r, c) => s.services.lock.lock(r, c) },
  'v3electionpb.Election/Campaign': { unary: undefined, waits: (s, r, c) => s.services.election.campaign(r, c) },
  'v3electionpb.Election/Observe': { serverStream: undefined, streamCall: (s, r, c) => s.services.election.observe(r, c) as unknown as BidiCall },
};

/** The member's services of one proto service, by the member service's method name (`leaseGrant`). */
type ServiceMethods = Record<string, ((...args: never[]) => unknown) | undefined>;

/** A route to `method` (`Lease/LeaseGrant`) as the proto's descriptor declares it, calling the member's method of that name. */
function routeOf(method: string): Route {
  const slash = method.indexOf('/');
  const qualified = method.slice(0, slash);
  const service = qualified.slice(qualified.lastIndexOf('.') + 1) as EtcdServiceName;
  const name = method.slice(slash + 1);
  const pkg = SERVICE_PACKAGES[service];
  const def = etcdServiceDefinition(service)[name];
  if (def === undefined) throw new Error(`etcdsim: no method ${method} in the protos`);
  const typeOf = (t: unknown): string => `${pkg}.${(t as { type: { name: string } }).type.name}`;
  const { requestType, responseType } = def as unknown as { requestType: unknown; responseType: unknown };
  const member = callNameOf(name);
  const fn = (s: MemberView): ((...args: never[]) => unknown) => {
    const svc = s.services[service.toLowerCase() as keyof MemberServices] as unknown as ServiceMethods;
    const f = svc[member];
    // A method the member does not model (Downgrade): UNIMPLEMENTED, as its gRPC door answers.
    if (f === undefined) throw grpcError(GrpcCode.UNIMPLEMENTED, `The server does not implement the method /${pkg}.${service}/${name}`);
    return f.bind(svc);
  };
  const route: Route = { method, requestType: typeOf(requestType), responseType: typeOf(responseType) };
  const kind: Partial<Route> = def.requestStream
    ? { bidi: (s, c) => fn(s)(c as never) as BidiCall }
    : def.responseStream
      ? { serverStream: (s, r, c) => fn(s)(r, c as never) as Awaitable<Iterable<unknown>> }
      : { unary: (s, r, c) => fn(s)(r, c as never) };
  return { ...route, ...kind, ...SERVED_OTHERWISE[method] };
}

let routes: ReadonlyMap<string, Route> | undefined;

/** The gateway's route at `path` under /v3/ (the routes are built from the protos on first use). */
export function routeAt(path: string): Route | undefined {
  routes ??= new Map(PATHS.map(([p, method]) => [p, routeOf(method)]));
  return routes.get(path);
}

