/**
 * Node's Buffer, behind one module so the browser build can swap it: the engine keeps Node's fast byte
 * paths (latin1 index keys, pooled copies, base64 bytes on the wire) on Node, and the playground bundle
 * (scripts/build.mjs) resolves this file to src/playground/browser/bytes_platform.ts, a Buffer made of
 * Uint8Array and TextEncoder/TextDecoder. Import Buffer from here, never from node:buffer, on any path the
 * scenario runner reaches.
 */
export { Buffer } from 'node:buffer';
