/**
 * etcd's Maintenance service as served (etcd's v3rpc/maintenance.go): Status, Hash, HashKV, MoveLeader,
 * Defragment and Alarm forwarded to the member's MaintenanceService (src/server/maintenance_service.ts) by
 * name; Snapshot streams the member's backend file as it writes it. Downgrade is not modeled: the service
 * has no such method, so the door answers grpc-go's `unknown method`.
 */
import type * as M from '../server/messages.js';
import { snapshotResponseFrames } from './snapshot_wire.js';
import type { Handlers, MethodTable } from './handlers.js';

export function maintenanceServer(h: Handlers): MethodTable {
  return {
    ...h.forwarded('Maintenance'),
    // The member streams its file as it writes it (snapshotStream; a cluster member once it takes the call),
    // into a few reused buffers: at most 64 KiB of responses wait in the stream, far less than the reuse allows.
    Snapshot: h.serverStream(
      (req: M.SnapshotRequest, ctx) => h.member().services.maintenance.snapshotStream(req, ctx, { reusePieces: true }),
      snapshotResponseFrames,
    ),
  };
}
