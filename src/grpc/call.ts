/**
 * A served gRPC call as etcd's method handlers see it, whatever carries it: the request's metadata, its
 * deadline, the client certificate, and the ways grpc-go lets a handler answer. The gRPC door (door.ts)
 * makes these from HTTP/2 streams; handlers.ts runs etcd's methods on them (mapped per service in *_server.ts).
 */
import type { PeerCertificate } from 'node:tls';
import type { ResponseSink } from '../server/index.js';

/** What every call offers its handler. */
export interface ServerCall {
  /** A request header (gRPC metadata) by lower-case name: its first value, or undefined. */
  header(name: string): string | undefined;
  /** When the call's grpc-timeout passes (host ms), or undefined for none. */
  readonly deadline: number | undefined;
  /** The client certificate the TLS handshake verified (Go's VerifiedChains), or undefined. */
  peerCertificate(): PeerCertificate | undefined;
  /** `listener` runs if the client cancels or its connection drops before the call is answered; returns an unsubscribe. */
  onCancel(listener: () => void): () => void;
  /**
   * The handler's work goes on past this turn (a promise): until the returned function runs, the call counts
   * against its connection's limit of calls in progress — also once the client reset it, as grpc-go counts a
   * handler until it returns (its rapid-reset fix) — so a client cannot start work without end by resetting.
   */
  busy(): () => void;
}

/** A unary call: one request message, answered by one response message then status 0, or by a status alone. */
export interface UnaryCall extends ServerCall {
  /** The request message (without its 5-byte gRPC prefix). */
  readonly message: Buffer;
  /** Answers with one message, already framed (frameMessage, or an encoder that leaves the 5 bytes free), then status 0. */
  reply(frame: Buffer): void;
  /** Answers with a status in one HEADERS frame (grpc-go's answer to a handler's error before any message). */
  fail(code: number, details: string): void;
  /** The client cancelled or went away (or the call is answered): an answer would be dropped, so none is encoded. */
  readonly gone: boolean;
}

/** The response side of a streaming call: messages as the handler sends them, then a status. */
export interface CallResponses {
  /**
   * Sends one framed response message (headers go first, once). False once grpc-go's per-stream write quota
   * (64 KiB) waits unsent — the client is not reading; wait for `onDrain` before sending more (etcd's send
   * loop blocks there, and what it cannot send stays with the caller).
   */
  send(frame: Buffer): boolean;
  /** After send() returned false: the waiting bytes went below the quota. */
  onDrain: (() => void) | undefined;
  /** Ends the call with a status (0: OK): in trailers after the responses sent, or alone in one HEADERS frame. */
  end(code: number, details: string): void;
  /** The call is over for the client (answered, cancelled, or its connection gone): nothing more is sent. */
  readonly gone: boolean;
}

/** A server-streaming call (Snapshot, RangeStream, Observe): one request message, then a stream of responses. */
export interface ServerStreamCall extends ServerCall, CallResponses {
  /** The request message (without its 5-byte gRPC prefix). */
  readonly message: Buffer;
}

/** A bidirectional call (Watch, LeaseKeepAlive): request messages as they come, responses as the handler sends them. */
export interface BidiCall extends ServerCall, CallResponses {
  /** Each request message (without its prefix), in order. Set by the handler when the call starts. */
  onMessage: ((message: Buffer) => void) | undefined;
  /** The client closed its side (no more messages); the call stays open until the handler ends it. */
  onHalfClose: (() => void) | undefined;
  /**
   * The door refused the request stream (a message over the receive limit, a bad flag, a cut-off message):
   * the handler releases what the call holds and ends it with this status. Unset: the door ends it.
   */
  onRefused: ((code: number, details: string) => void) | undefined;
}

/**
 * A server stream's responses as a ResponseSink (sendResponses pulls them as the client reads): each written
 * as the framed buffers `frames` makes of it, then status 0.
 */
export function responseSink<R>(call: CallResponses, frames: (r: R) => readonly Buffer[]): ResponseSink<R> {
  return {
    write: (r) => {
      let more = true;
      for (const f of frames(r)) more = call.send(f);
      return more;
    },
    onDrain: (resume) => {
      call.onDrain = () => {
        call.onDrain = undefined;
        resume();
      };
    },
    end: () => call.end(0, ''),
    get gone() {
      return call.gone;
    },
  };
}

/** A gRPC method as the door dispatches it: its kind and its handler. */
export type GrpcMethod =
  | { readonly kind: 'unary'; readonly serve: (call: UnaryCall) => void }
  | { readonly kind: 'serverStream'; readonly serve: (call: ServerStreamCall) => void }
  | { readonly kind: 'bidi'; readonly serve: (call: BidiCall) => void };

/** A method's wire form as proto-loader defines it: its path, kind and codecs. */
export interface MethodCodec {
  readonly path: string;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
  requestDeserialize(bytes: Buffer): unknown;
  responseSerialize(value: never): Buffer;
}

/** How a service implements a method: given its wire form, the method the door dispatches to. */
export type MethodImpl = (m: MethodCodec) => GrpcMethod;

/** `message` with gRPC's 5-byte prefix (uncompressed, big-endian length) in front. */
export function frameMessage(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}
