// Node's floor for the attack bench's rows on many connections (half-open connections, slowloris) and the
// SETTINGS flood: what Node itself spends on the same input, with no HTTP/2 and no etcd on it. `net`: a bare
// net server reading and discarding what comes; `http`: node:http configured as etcdsim's client port
// configures it for HTTP/1.1 (no request or keep-alive timeouts, a 1 MiB + 4 KiB header section), answering
// 404; `settings`: HTTP/2 frames read and dropped but SETTINGS, each answered with its ACK, reading paused
// while 50 ACKs are unsent (the throttle etcdsim and grpc-go apply to a peer that does not read its replies).
// Whatever an attack costs this process is Node's per-socket and per-read cost, which etcdsim cannot go below;
// bench/go/socket_floor is Go's, the same three.
// Usage: node bench/socket_floor_server.mjs net|http|settings PORT → prints "socket floor on 127.0.0.1:PORT".
import * as http from 'node:http';
import * as net from 'node:net';

const [kind, portArg] = process.argv.slice(2);
const port = Number(portArg);
const ACK = Buffer.from([0, 0, 0, 4, 1, 0, 0, 0, 0]);
const MAX_UNSENT = 50 * ACK.length;

/** Answers each SETTINGS frame with its ACK (after the 24-octet preface), pausing while 50 ACKs are unsent. */
function settings(socket) {
  let rest = Buffer.alloc(0);
  let prefaceLeft = 24;
  // A write's callback runs once it left for the kernel, with every write before it: read again then.
  const sent = () => {
    if (socket.isPaused() && socket.writableLength <= MAX_UNSENT) socket.resume();
  };
  socket.on('data', (d) => {
    const buf = rest.length === 0 ? d : Buffer.concat([rest, d]);
    let at = Math.min(prefaceLeft, buf.length);
    prefaceLeft -= at;
    let acks = 0;
    while (buf.length - at >= 9) {
      const len = buf.readUIntBE(at, 3);
      if (buf.length - at < 9 + len) break;
      if (buf[at + 3] === 4 && (buf[at + 4] & 1) === 0) acks++;
      at += 9 + len;
    }
    rest = Buffer.from(buf.subarray(at));
    if (acks === 0) return;
    socket.write(acks === 1 ? ACK : Buffer.concat(Array.from({ length: acks }, () => ACK)), sent);
    if (socket.writableLength > MAX_UNSENT) socket.pause();
  });
}

const server =
  kind === 'http'
    ? http.createServer({ keepAliveTimeout: 0, requestTimeout: 0, maxHeaderSize: (1 << 20) + 4096 }, (_req, res) => {
        res.statusCode = 404;
        res.end();
      })
    : net.createServer((socket) => {
        socket.on('error', () => socket.destroy());
        if (kind === 'settings') settings(socket);
        else socket.on('data', () => {});
      });
server.listen(port, '127.0.0.1', () => console.log(`socket floor on 127.0.0.1:${port}`));
process.on('SIGTERM', () => process.exit(0));
