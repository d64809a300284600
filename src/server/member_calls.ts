/**
 * etcd's calls a member answers, as one list every door and client derives its tables from: each method
 * etcd's .proto files declare (src/proto's service descriptors, in their order) that the member's service
 * class answers — so adding an RPC is its .proto line and its method on the class (plus the wire file's
 * mapping when it needs more than forwarding), and every list follows. A method the class lacks (etcd 3.5's
 * Downgrade, 3.7's RangeStream, which the gRPC door serves from Range) is not the member's: each door
 * answers it as etcd's would a method it does not serve.
 *
 * How a door calls it in process: a unary call answers (now, or later on a cluster member); a stream call —
 * a method whose requests stream (Watch, LeaseKeepAlive) or whose responses do (Election.Observe) — opens at
 * once and answers through its StreamCall. One exception, named below: Snapshot streams its responses in
 * etcd, and the member answers it in full (every piece in one array; its streaming form is
 * MaintenanceService.snapshotStream, which the wire doors use).
 *
 * It reads the protos' declarations as generated (src/proto/generated/services.ts), not the protos, so it
 * loads nothing a browser lacks: the playground's bundle may hold it.
 */
// calls.ts, not proto's index: the in-process member lists its calls without loading the .proto loader.
import { callNameOf, SERVICE_DECLARATIONS, type EtcdServiceName } from '../proto/calls.js';
import { SERVICE_CLASSES } from './service_classes.js';
import type { MemberServices } from './member_view.js';

/** How a door calls a member's call in process. */
export type CallKind = 'unary' | 'stream';

/** One of etcd's calls as a member answers it. */
export interface MemberCall {
  /** The proto service (`Lease`). */
  readonly service: EtcdServiceName;
  /** Where a member view holds the service (`lease`: `view.services.lease`). */
  readonly services: keyof MemberServices;
  /** The method's name in the .proto (`LeaseGrant`). */
  readonly method: string;
  /** The method's name on the member's service (`leaseGrant`). */
  readonly call: string;
  readonly kind: CallKind;
  /** Whether etcd's wire streams its requests or its responses (the .proto's `stream`). */
  readonly requestStream: boolean;
  readonly responseStream: boolean;
}

/** Server-streaming methods the member answers in full rather than through a stream call (see the header). */
const ANSWERED_IN_FULL: ReadonlySet<string> = new Set(['Maintenance/Snapshot']);

let calls: readonly MemberCall[] | undefined;

/** Every call a member answers, service by service in the .proto's order (built once). */
export function memberCalls(): readonly MemberCall[] {
  calls ??= Object.freeze(
    (Object.keys(SERVICE_CLASSES) as EtcdServiceName[]).flatMap((service) => {
      const proto = SERVICE_CLASSES[service].prototype as Record<string, unknown>;
      return Object.entries(SERVICE_DECLARATIONS[service]).flatMap(([method, def]): MemberCall[] => {
        const call = callNameOf(method);
        if (typeof proto[call] !== 'function') return [];
        const { requestStream, responseStream } = def;
        const kind = requestStream || (responseStream && !ANSWERED_IN_FULL.has(`${service}/${method}`)) ? 'stream' : 'unary';
        return [{ service, services: service.toLowerCase() as keyof MemberServices, method, call, kind, requestStream, responseStream }];
      });
    }),
  );
  return calls;
}
