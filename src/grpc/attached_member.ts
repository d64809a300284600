/**
 * A member made apart from the port that serves it (a cluster member, serve_cluster.ts; a member in a
 * process of its own): serve() binds the port, then serves that member's view (src/server/member_view.ts)
 * instead of building an EtcdServer of its own.
 */
import type { EtcdServer, MemberView } from '../server/index.js';
import type { ClientHttp } from '../http/index.js';

/**
 * A member that exists apart from the port (serveMember's `attach`): it binds the port, then asks for the
 * member with the port's endpoint, and serves it instead of building an EtcdServer of its own. Whoever
 * made the member closes it; serve()'s close() only stops the port.
 */
export interface AttachedMember {
  readonly member: MemberView;
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
