/**
 * What serve() takes as its member: the types of src/http/served_member.ts (shared with the JSON gateway),
 * and a member made apart from the port (a cluster member, serve_cluster.ts).
 */
import type { EtcdServer } from '../server/index.js';
import type { ClientHttp } from '../http/index.js';
import type { ServedMember } from '../http/served_member.js';

export { isPromiseLike, thenMap, type Awaitable, type ServedMember, type ServedServices } from '../http/served_member.js';

/**
 * A member that exists apart from the port (serveMember's `attach`): it binds the port, then asks for the
 * member with the port's endpoint, and serves it instead of building an EtcdServer of its own. Whoever
 * made the member closes it; serve()'s close() only stops the port.
 */
export interface AttachedMember {
  readonly member: ServedMember;
  /** The member's engine now (a crash and restart replace it): ServeHandle.server and the engine-only paths read it. */
  readonly server: EtcdServer;
  /** The HTTP side of the client port (/health, /metrics, the gateway, anything the attacher adds). */
  readonly http: ClientHttp;
}

/**
 * The listening side of a client port, as the attacher of its member switches it: a crashed cluster member's
 * port refuses connections (a killed etcd's does) and listens again on restart.
 */
export interface PortSwitch {
  /** Stops listening and resets the port's connections. */
  refuse(): Promise<void>;
  /** Listens again on the same port. */
  listen(): Promise<void>;
}
