// The floor of the attack bench's many-connection rows (half-open connections, slowloris): what Node itself
// spends holding the same sockets, with no HTTP/2 and no etcd on them. `net`: a bare net server reading and
// discarding what comes; `http`: node:http configured as etcdsim's client port configures it for HTTP/1.1
// (no request or keep-alive timeouts, a 1 MiB + 4 KiB header section), answering 404. Whatever an attack
// costs this process is Node's per-socket cost, which etcdsim cannot go below.
// Usage: node bench/socket_floor_server.mjs net|http PORT → prints "socket floor on 127.0.0.1:PORT".
import * as http from 'node:http';
import * as net from 'node:net';

const [kind, portArg] = process.argv.slice(2);
const port = Number(portArg);
const server =
  kind === 'http'
    ? http.createServer({ keepAliveTimeout: 0, requestTimeout: 0, maxHeaderSize: (1 << 20) + 4096 }, (_req, res) => {
        res.statusCode = 404;
        res.end();
      })
    : net.createServer((socket) => {
        socket.on('data', () => {});
        socket.on('error', () => socket.destroy());
      });
server.listen(port, '127.0.0.1', () => console.log(`socket floor on 127.0.0.1:${port}`));
process.on('SIGTERM', () => process.exit(0));
