/**
 * The JSON gateway's request body (etcd's grpc-gateway reads it whole before it calls etcd): read into one
 * string, with a bound. etcd reads any body whole (a 200 MiB POST cost it 845 MB) and then fails the message
 * at the gRPC limit; here reading stops past the bound, and the gateway gives the answer etcd gives such a
 * message (429 RESOURCE_EXHAUSTED) with the connection closed.
 */
import type { HttpRequest } from './gateway.js';

/**
 * The largest request body the gateway reads: four times what the gRPC door takes of a message (JSON spells
 * bytes in base64 and names every field, so a message at the door's limit is well within it).
 */
export function gatewayBodyLimit(maxRequestBytes: number): number {
  return 4 * (maxRequestBytes + GRPC_GO_OVERHEAD_BYTES);
}
/** What grpc-go's limit adds to --max-request-bytes in etcd (its grpcOverheadBytes). */
const GRPC_GO_OVERHEAD_BYTES = 512 * 1024;

/**
 * The request's body, once it has all arrived — or, past `limit` octets, how many were read when reading
 * stopped. A request whose client goes before its body ends never resolves: Go's gateway fails the body
 * read and calls nothing (read as empty, it would grant a lease or enable auth for a client that is gone).
 */
export function readBody(req: HttpRequest, limit: number): Promise<string | { readonly over: number }> {
  return new Promise((resolve) => {
    let chunks: Buffer[] = [];
    let n = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      n += c.length;
      if (n <= limit) return void chunks.push(c);
      over = true;
      chunks = [];
      resolve({ over: n });
    });
    req.on('end', () => {
      if (!over) resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', () => {});
  });
}
