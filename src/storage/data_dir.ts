/**
 * etcd's data directory layout and its backend file: `DATA-DIR/member/wal` holds the WAL (wal.ts),
 * `DATA-DIR/member/snap/db` the backend — a bbolt file in etcd's bucket layout (src/snapshot), the same
 * bytes `etcdctl snapshot save` receives, without the SHA-256 trailer. A member whose WAL exists restarts
 * from it (etcd's "already initialized as member before"); one without starts new.
 *
 * etcd writes the db in place, page by page, with bbolt's own crash safety. Here the whole file is written
 * anew when the log is folded into it: to `db.tmp`, synced, then renamed over `db`, so a crash leaves the
 * old db or the new one, never half of one.
 */
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { syncDir } from './wal.js';

/** Where etcd keeps each part of a member's state under its --data-dir. */
export interface DataDirLayout {
  readonly dataDir: string;
  readonly memberDir: string;
  readonly walDir: string;
  readonly snapDir: string;
  /** The backend (bbolt) file. */
  readonly backendPath: string;
}

/** The layout of `dataDir` (etcd's defaults; `walDir` is --wal-dir when given). */
export function dataDirLayout(dataDir: string, walDir?: string): DataDirLayout {
  const memberDir = join(dataDir, 'member');
  const snapDir = join(memberDir, 'snap');
  return { dataDir, memberDir, walDir: walDir ?? join(memberDir, 'wal'), snapDir, backendPath: join(snapDir, 'db') };
}

/** The backend file, or undefined when there is none (a member that never folded its log, or lost the file). */
export function readBackendFile(layout: DataDirLayout): Uint8Array | undefined {
  const p = layout.backendPath;
  if (!existsSync(p) || !statSync(p).isFile()) return undefined;
  return new Uint8Array(readFileSync(p));
}

/** Replaces the backend file with `bytes`, synced, in one rename (see the module comment). */
export function writeBackendFile(layout: DataDirLayout, bytes: Uint8Array): void {
  const tmp = `${layout.backendPath}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    let done = 0;
    while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, layout.backendPath);
  syncDir(layout.snapDir);
}

/** Removes what an interrupted write left behind (a `db.tmp` never renamed). */
export function removeLeftovers(layout: DataDirLayout): void {
  rmSync(`${layout.backendPath}.tmp`, { force: true });
}
