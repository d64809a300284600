/**
 * Behaviour that changed between etcd releases. The simulator follows the newest release (3.7) by default;
 * differential runs against an older etcd pick that release's rules. Every switch names the etcd change.
 */
import type { EtcdVersion } from '../etcd/index.js';

export interface Compat {
  /**
   * etcd PR #18274 (issue #18089), v3.6.0, backported by PR #18474 (v3.5.16) and PR #18475 (v3.4.34):
   * compaction keeps a tombstone that sits exactly at the compaction revision, so a watch from that
   * revision still sees the delete. The '3.4' profile models a 3.4 release before the backport (3.4.23).
   */
  readonly keepTombstoneAtCompactRev: boolean;
  /**
   * etcd PR #20707/#20709 (v3.5.24, v3.6.6): a watch with a negative start revision is answered created and
   * canceled as compacted. etcd 3.4 accepted it as "from now" until the first compaction, then canceled it.
   */
  readonly negativeWatchStartRevRejected: boolean;
  /**
   * etcd 3.4 answered a stream-wide progress request at once, out of band of the event channel (so it
   * could overtake events, issue #15220); later releases answer through the channel, only when synced.
   */
  readonly progressRequestAlwaysAnswered: boolean;
  /**
   * Before etcd 3.6 moved the apply logic into server/etcdserver/txn, a txn's pre-checks ran every put check
   * (ignore_* flags, lease) before any range check (revision); since then they run in op order.
   */
  readonly txnChecksPutsFirst: boolean;
  /**
   * etcd 3.4's checkRangeRequest (v3rpc/key.go) looked at the key only; an unknown sort_order reached the
   * apply, which neither sorts nor refuses it: the keys come in key order, truncated to the limit. 3.5 added
   * the sort option checks (ErrInvalidSortOption).
   */
  readonly sortOrderUnchecked: boolean;
  /**
   * etcd PR #19188 (issue #19179), v3.6.0, backported by PR #19249 (v3.5.18) and PR #19251 (v3.4.36): when
   * a member rebuilds its index from the backend (a restart, a snapshot), a key whose first stored revision is
   * a tombstone is restored into the index as `{tombstone}{empty}`. Before, the rebuild skipped it, so the
   * compaction resumed at restart deleted that tombstone too and a watch from the compaction revision missed
   * the DELETE. The '3.4' profile models 3.4.23, before the backport (where the 3.4 compaction rule already
   * drops a tombstone at the compaction revision, so the two bugs cannot be told apart there).
   */
  readonly restoreLoneTombstone: boolean;
}

export function compatFor(version: EtcdVersion): Compat {
  return {
    keepTombstoneAtCompactRev: version !== '3.4',
    negativeWatchStartRevRejected: version !== '3.4',
    progressRequestAlwaysAnswered: version === '3.4',
    txnChecksPutsFirst: version === '3.4' || version === '3.5',
    sortOrderUnchecked: version === '3.4',
    restoreLoneTombstone: version !== '3.4',
  };
}
