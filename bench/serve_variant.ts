/**
 * `etcdsim serve` with its unary calls on grpc-js instead of the front door's thin path (ServeOptions.grpcUnary):
 * the bench's A/B of the two. Usage: node --import tsx bench/serve_variant.ts <port> [door|grpc-js]
 * Prints the same ready line as `etcdsim serve`; SIGTERM / SIGINT close it.
 */
import { serve } from '../src/grpc/index.js';

const port = Number(process.argv[2] ?? '0');
const unary = process.argv[3] === 'door' ? 'door' : 'grpc-js';
const handle = await serve({ port, etcdVersion: '3.4', grpcUnary: unary });
process.stdout.write(`etcdsim serving etcd v3 API on ${handle.endpoint} (unary calls on ${unary})\n`);
for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  process.once(sig, () => {
    void handle.close().then(() => process.exit(0));
  });
}
