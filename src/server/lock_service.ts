/**
 * v3lockpb.Lock over one member (etcd's v3lock server, which runs concurrency.Mutex on an in-process
 * client): Lock and Unlock in message form. See concurrency_rules.ts for the session, key and waiting rules.
 *
 * Lock(name, lease):
 *  1. one Txn: if the key `name/<lease hex>` was never created, put it (empty value, bound to the lease)
 *     and read the oldest key under `name/`; otherwise read that key and the oldest one. A key this
 *     lease already holds is reused, with its create revision.
 *  2. the lock is held when the oldest key is ours: the answer carries the Txn's header. Otherwise the
 *     call waits until every key created before ours is deleted, and answers with the header of the read
 *     that saw none left. Our own key is not looked at again: if its lease expires meanwhile, the call
 *     still answers once the older keys are gone, as etcd's does.
 *  3. if the wait ends without the lock — the client cancels, its deadline passes, it disconnects, or
 *     the wait fails — our key is deleted (unconditionally, even a reused one), and the call fails.
 * A missing lease fails the Txn's Put: `2 UNKNOWN: etcdserver: requested lease not found` (3.4.23).
 *
 * Unlock(key) is a plain delete of the key (no check of who holds it); an empty key fails with
 * `2 UNKNOWN: etcdserver: key is not provided`.
 */
import type { CallContext } from './call_context.js';
import {
  candidateKey,
  createRevisionIs,
  fireAndForget,
  firstCreate,
  keyPrefix,
  memberClient,
  rangeOf,
  request,
  sessionLease,
  waitDeletes,
  abortReason,
  type ConcurrencyClient,
  type WaitingCallContext,
} from './concurrency_rules.js';
import { andThen, now, type Awaitable } from './awaitable.js';
import { bytesIn, bytesOut, int64ToBigInt, int64ToNumber } from './convert.js';
import { asGrpc } from './errors.js';
import type * as M from './messages.js';
import type { EtcdServer } from './etcd_server.js';

const EMPTY = new Uint8Array(0);

/**
 * The rules of Lock and Unlock, once, over a member's in-process client: a single member's (answers at
 * once, LockService) or a cluster member's (answers once Raft let it, src/cluster/lock_election.ts).
 */
export class LockRules {
  constructor(private readonly client: ConcurrencyClient) {}

  /** Lock.Lock (see the module comment). */
  lock(req: M.LockRequest, ctx?: WaitingCallContext): Awaitable<M.LockResponse> {
    const client = this.client;
    const { name, leaseIn } = asGrpc(() => ({ name: bytesIn(req.name, 'name'), leaseIn: int64ToBigInt(req.lease, 'lease') }));
    if (ctx?.signal?.aborted === true) throw abortReason(ctx.signal);
    return andThen(sessionLease(client, leaseIn, ctx), (lease) => {
      const pfx = keyPrefix(name);
      const myKey = candidateKey(pfx, lease);
      const txn = request(
        () =>
          client.txn(
            {
              compare: [createRevisionIs(myKey, 0)],
              success: [{ request_put: { key: myKey, value: EMPTY, lease: String(lease) } }, { request_range: firstCreate(pfx) }],
              failure: [{ request_range: { key: myKey } }, { request_range: firstCreate(pfx) }],
            },
            ctx,
          ),
        ctx,
      );
      return andThen(txn, (txn) => {
        const myRev = txn.succeeded
          ? int64ToNumber(txn.header.revision, 'revision')
          : int64ToNumber(rangeOf(txn, 0).kvs[0]?.create_revision, 'create_revision');
        const owner = rangeOf(txn, 1).kvs[0];
        const key = bytesOut(myKey);
        if (owner === undefined || int64ToNumber(owner.create_revision, 'create_revision') === myRev) return { header: txn.header, key };
        // Whatever ends the wait early releases our key. etcd unlocks with its in-process client's own
        // context, which carries no caller: the delete is made without the caller's token. etcd ignores a
        // failed unlock here too (it returns the wait's error).
        const unlock = (): void => fireAndForget(() => client.deleteRange({ key: myKey }, {}));
        return waitDeletes(client, pfx, myRev - 1, ctx, { onAbort: unlock, onError: unlock }).then((header) => ({ header, key }));
      });
    });
  }

  /** Lock.Unlock: deletes the key; the header is the delete's (the current revision when nothing was deleted). */
  unlock(req: M.UnlockRequest, ctx?: CallContext): Awaitable<M.UnlockResponse> {
    const key = asGrpc(() => bytesIn(req.key, 'key'));
    return andThen(
      request(() => this.client.deleteRange({ key }, ctx)),
      (r) => ({ header: r.header }),
    );
  }
}

/** v3lockpb.Lock on a single member: its requests answer at once, so Unlock does too. @public */
export class LockService {
  private readonly rules: LockRules;

  /** @internal */
  constructor(server: EtcdServer) {
    this.rules = new LockRules(memberClient(server));
  }

  /**
   * Lock.Lock: resolves once the lock is held, with the header and the ownership key; `ctx.signal`
   * ends the wait early (the key is then deleted, as etcd deletes it).
   */
  async lock(req: M.LockRequest, ctx?: WaitingCallContext): Promise<M.LockResponse> {
    return this.rules.lock(req, ctx);
  }

  /** Lock.Unlock: deletes the key; the header is the delete's (the current revision when nothing was deleted). */
  unlock(req: M.UnlockRequest, ctx?: CallContext): M.UnlockResponse {
    return now(this.rules.unlock(req, ctx));
  }
}
