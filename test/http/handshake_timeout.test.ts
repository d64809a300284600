/**
 * The client port's handshake deadline (grpc-go's ConnectionTimeout, 120 s): a connection that has not
 * finished its handshake — TLS, the bytes that tell its protocol, the HTTP/2 preface and SETTINGS — by then
 * is closed; one that has goes on. Time is a virtual clock's, through the port's injectable timers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { readFileSync } from 'node:fs';
import { DEFAULT_HANDSHAKE_TIMEOUT_MS, listenClientPort, type ClientPort, type HostTimers } from '../../src/http/port.js';
import { Http2ServerConnection } from '../../src/h2/connection.js';
import { CLIENT_PREFACE, Flags, FrameType, frame } from '../../src/h2/frames.js';
import { VirtualClock } from '../../src/sim/index.js';
import { SERVER_EXT, TestPki } from '../grpc/pki.js';
import { RawClient } from '../h2/helpers.js';

/**
 * A port on a virtual clock whose HTTP/2 connections run on Http2ServerConnection; `accepted` counts deadlines
 * set (the port reads the clock once per connection it accepts, to date its deadline, and otherwise only when
 * its timer fires — which these tests let happen only after every connection is in).
 */
async function port(tlsOpts?: tls.TlsOptions): Promise<{ port: ClientPort; clock: VirtualClock; accepted: () => Promise<void>; timers: () => { armed: number; live: number } }> {
  const clock = new VirtualClock();
  let armed = 0;
  let live = 0;
  let dated = 0;
  let wake: (() => void) | undefined;
  const timers: HostTimers = {
    after(ms, fn) {
      armed++;
      live++;
      const h = clock.setTimer(clock.now() + ms, () => {
        live--;
        fn();
      });
      return { cancel: () => void (clock.cancel(h) && live--) };
    },
    now() {
      dated++;
      wake?.();
      return clock.now();
    },
  };
  const p = await listenClientPort({
    host: '127.0.0.1',
    port: 0,
    tls: tlsOpts,
    timers,
    handler: (_req, res) => {
      res.writeHead(200);
      res.end('ok');
    },
    http2: (socket, head, _secure, onHandshake) => {
      new Http2ServerConnection(socket, { head, onHandshake, onStream: () => {} });
    },
  });
  let waited = 0;
  return {
    port: p,
    clock,
    // Resolves once the port has accepted (and dated the deadline of) one more connection.
    accepted: async () => {
      waited++;
      while (dated < waited) await new Promise<void>((r) => (wake = r));
    },
    timers: () => ({ armed, live }),
  };
}

/** Resolves when the server has closed `s` (read on, so that its end is seen). */
const closed = (s: net.Socket): Promise<void> =>
  new Promise((resolve) => {
    if (s.destroyed) return resolve();
    s.once('close', () => resolve());
    s.resume();
  });
const PING = frame(FrameType.PING, 0, 0, Buffer.alloc(8));

test('plaintext: silent, half a preface and a preface without SETTINGS are closed at 120 s; a finished handshake is not', async () => {
  const { port: p, clock, accepted } = await port();
  const silent = net.connect(p.port, '127.0.0.1');
  const half = net.connect(p.port, '127.0.0.1');
  const noSettings = net.connect(p.port, '127.0.0.1');
  let done: RawClient | undefined;
  try {
    await accepted();
    await accepted();
    await accepted();
    half.write(CLIENT_PREFACE.subarray(0, 10));
    noSettings.write(CLIENT_PREFACE);
    done = await RawClient.connect(p.port);
    await accepted();
    for (const s of [silent, half, noSettings]) s.on('error', () => {});
    clock.advance(DEFAULT_HANDSHAKE_TIMEOUT_MS - 1);
    // Still open a millisecond before: the finished one answers, and the others are still connected.
    done.send(PING);
    await done.waitFor((f) => f.type === FrameType.PING && (f.flags & Flags.ACK) !== 0);
    assert.deepEqual([silent, half, noSettings].map((s) => s.destroyed), [false, false, false]);
    clock.advance(1);
    await Promise.all([closed(silent), closed(half), closed(noSettings)]);
    const before = done.frames.length;
    done.send(PING);
    await done.waitFor((f) => f.type === FrameType.PING && (f.flags & Flags.ACK) !== 0 && done!.frames.indexOf(f) >= before);
    assert.equal(done.ended, false);
  } finally {
    for (const s of [silent, half, noSettings]) s.destroy();
    done?.destroy();
    await p.close();
  }
});

test("TLS: a connection silent before or after its TLS handshake is closed at 120 s; HTTP/1.1 (node:http's once known) and a finished HTTP/2 handshake are not", async () => {
  const pki = new TestPki('etcdsim-handshake-');
  pki.ca('ca');
  pki.issue('server', '/CN=localhost', 'ca', SERVER_EXT);
  const { port: p, clock, accepted } = await port({ cert: readFileSync(pki.path('server.crt')), key: readFileSync(pki.path('server.key')) });
  const raw = net.connect(p.port, '127.0.0.1');
  const connect = (alpn: string): Promise<tls.TLSSocket> =>
    new Promise((resolve, reject) => {
      const s = tls.connect({ port: p.port, host: '127.0.0.1', ALPNProtocols: [alpn], rejectUnauthorized: false }, () => resolve(s));
      s.once('error', reject);
    });
  let h2: tls.TLSSocket | undefined;
  let h1: tls.TLSSocket | undefined;
  let done: RawClient | undefined;
  try {
    await accepted();
    h2 = await connect('h2');
    await accepted();
    h1 = await connect('http/1.1');
    await accepted();
    done = await RawClient.connect(p.port, true, true);
    await accepted();
    for (const s of [raw, h2, h1]) s.on('error', () => {});
    let got = '';
    let wake: (() => void) | undefined;
    h1.on('data', (d: Buffer) => {
      got += d.toString();
      wake?.();
    });
    const answered = async (n: number): Promise<void> => {
      h1!.write('GET /x HTTP/1.1\r\nHost: x\r\n\r\n');
      while ((got.match(/HTTP\/1\.1 200/g) ?? []).length < n) await new Promise<void>((r) => (wake = r));
    };
    // Answered once: node:http has it, past its handshake.
    await answered(1);
    clock.advance(DEFAULT_HANDSHAKE_TIMEOUT_MS);
    await Promise.all([closed(raw), closed(h2)]);
    await answered(2);
    assert.equal(h1.destroyed, false);
    // An HTTP/2 connection that finished its preface over TLS goes on too.
    done.send(PING);
    await done.waitFor((f) => f.type === FrameType.PING && (f.flags & Flags.ACK) !== 0);
    assert.equal(done.ended, false);
  } finally {
    for (const s of [raw, h2, h1]) s?.destroy();
    done?.destroy();
    await p.close();
    pki.remove();
  }
});

test('one timer for every deadline: connections accepted together arm one, each is closed at its own 120 s, and a port whose connections are all done holds none', async () => {
  const { port: p, clock, accepted, timers } = await port();
  const early: net.Socket[] = [];
  let late: net.Socket | undefined;
  let done: RawClient | undefined;
  try {
    for (let i = 0; i < 20; i++) {
      const s = net.connect(p.port, '127.0.0.1');
      s.on('error', () => {});
      early.push(s);
      await accepted();
    }
    assert.deepEqual(timers(), { armed: 1, live: 1 }, 'a timer per connection');
    clock.advance(1000);
    late = net.connect(p.port, '127.0.0.1');
    late.on('error', () => {});
    await accepted();
    clock.advance(DEFAULT_HANDSHAKE_TIMEOUT_MS - 1000);
    await Promise.all(early.map(closed));
    assert.equal(late.destroyed, false);
    // The one timer now waits for the late connection: closed a second after the others, not before.
    assert.equal(timers().live, 1);
    clock.advance(999);
    done = await RawClient.connect(p.port);
    await accepted();
    // A PING answered: the server has read the SETTINGS before it, so this handshake is done.
    done.send(PING);
    await done.waitFor((f) => f.type === FrameType.PING && (f.flags & Flags.ACK) !== 0);
    assert.equal(late.destroyed, false);
    clock.advance(1);
    await closed(late);
    // Only the finished handshake is left, and it holds no timer.
    assert.equal(timers().live, 0);
    assert.equal(done.ended, false);
  } finally {
    for (const s of early) s.destroy();
    late?.destroy();
    done?.destroy();
    await p.close();
  }
});
