/**
 * Our HTTP/2 server connection (RFC 9113, HPACK of RFC 7541): what the client port's doors — the gRPC door
 * (src/grpc/door.ts) and the HTTP side (src/http/h2_exchange.ts) — take of it. A leaf: it imports nothing of
 * the project; the floors above import it only through this index (test/layout/index_imports.test.ts).
 */

// For the floors above, which import this folder only through this index (test/layout/index_imports.test.ts).
export { CONNECTION_SPECIFIC, Http2ServerConnection } from './connection.js';
export type { PingPolicy } from './connection.js';
export { H2Stream } from './stream.js';
export { ErrorCode, Flags, FrameType } from './frames.js';
export { EncodedHeaders, headerValue, HpackDecoder, HpackEncoder } from './hpack.js';
