// The floor of the shadow's bench (bench/shadow.bench.ts): a bare TCP relay in its own Node process — each
// client connection piped to a connection to etcd and back, nothing read, both sockets without Nagle's
// delay, as the shadow's proxy sets them (src/shadow/proxy.ts). Whatever latency it adds is the cost of a
// second process and two more socket hops per call, which no proxy in front of etcd avoids: the shadow's
// ratio to it is what the shadow's own work (its tap and the simulator) adds.
// Usage: node bench/relay_server.mjs PORT ETCD_HOST:PORT → prints "relay ready".
import net from 'node:net';

const [, , listen, target] = process.argv;
const [host, port] = target.split(':');
net
  .createServer((down) => {
    down.setNoDelay(true);
    const up = net.connect({ host, port: Number(port), noDelay: true });
    down.pipe(up).pipe(down);
    down.on('error', () => up.destroy());
    up.on('error', () => down.destroy());
    down.on('close', () => up.destroy());
    up.on('close', () => down.destroy());
  })
  .listen(Number(listen), '127.0.0.1', () => console.log('relay ready'));
