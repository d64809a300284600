/**
 * Who makes a call: what a gRPC request carries beside its message. Every service method takes it as an
 * optional last argument; server mode fills it from the `token` metadata, the in-process etcd3 adapter
 * and raw client from the token they got from Auth.Authenticate. No context (or no token) is a call
 * without credentials, which is all a call needs while auth is disabled.
 */
export interface CallContext {
  /** The simple token from Auth.Authenticate (gRPC metadata `token`). */
  readonly token?: string | undefined;
}
