/**
 * The etcd releases the simulator can behave as, written once: each rule set (`--etcd-version`, a
 * scenario's `etcd-version`, EtcdServerOptions.etcdVersion) with the release Status reports for it. Where
 * releases differ, src/mvcc/compat.ts and src/server/compat.ts name the etcd change.
 */

/** The etcd releases whose differing behaviour the model can reproduce. @public */
export type EtcdVersion = '3.4' | '3.5' | '3.6' | '3.7';

/**
 * Each rule set and the release it is (Status, /version, `etcd --version`, the log; unless
 * EtcdServerOptions.version says otherwise): the newest patch release whose behaviour the profile models —
 * 3.5.31 and 3.6.12 carry the last fix the profiles follow (MemberUpdate keeps a learner a learner), after
 * the 3.5.24 / 3.6.6 ones (docs/version-differences.md). The compiler holds its keys to EtcdVersion, so the
 * list of releases is this one.
 */
export const ETCD_RELEASES: Readonly<Record<EtcdVersion, string>> = Object.freeze({
  '3.4': '3.4.23',
  '3.5': '3.5.31',
  '3.6': '3.6.12',
  '3.7': '3.7.0',
});

/** Every EtcdVersion, oldest first. */
export const ETCD_VERSIONS: readonly EtcdVersion[] = Object.freeze(Object.keys(ETCD_RELEASES) as EtcdVersion[]);

/** The rules the simulator follows unless told otherwise: the newest release's. */
export const DEFAULT_ETCD_VERSION: EtcdVersion = '3.7';

/** Whether `v` names a release the simulator can behave as. */
export function isEtcdVersion(v: string): v is EtcdVersion {
  return (ETCD_VERSIONS as readonly string[]).includes(v);
}
