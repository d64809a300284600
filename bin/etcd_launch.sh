# `etcd` (etcdsim as the etcd binary) as a harness starts it: install-bin's DIR/etcd sources this file with
# ETCDSIM_NODE (the Node to run) and ETCDSIM_ROOT (this package) set, the process tests' launcher
# (src/diff/etcd_cluster.ts) runs it with sh and ETCDSIM_NODE in the environment.
# A member's start is mostly JavaScript that every process would do alike, so it starts from the V8
# start-up snapshot the build made (dist/etcd.blob, bin/etcd_snapshot.cjs) when that can be trusted:
#  - the build finished (its stamp is written last, and a build starts by removing dist/);
#  - dist/ is fresh as bin/build_fresh.js says it: no file under src/ (a development checkout; an installed
#    package has none) is newer than the stamp;
#  - the blob was made by this very Node binary: the build gives the blob the binary's modification time
#    (Node refuses to start from another version's blob, with an error instead of the command);
# otherwise bin/etcdsim.js runs the command, which also deals with a stale dist/.
# All of it is sh builtins but one `find` in a development checkout: a millisecond against the ~100 ms of
# CPU the snapshot saves.
# NODE_EXTRA_CA_CERTS is Node's, not etcd's (Go reads neither it nor Node's root store), and Node 20 parses the
# whole file at every start, before any of our code runs: with a system bundle in it, as some CI images and
# sandboxes set (144 certificates), that is ~50 ms of CPU per member, more than etcd needs to serve. A member
# never consults the default roots — its TLS clients (the peer dials, src/peer/transport.ts) take the CA of
# its flags or, with auto-TLS, skip verification as etcd does — so the member runs without it.
unset NODE_EXTRA_CA_CERTS
etcdsim_node=${ETCDSIM_NODE:-$(command -v node)}
case $0 in */*) etcdsim_root=${ETCDSIM_ROOT:-${0%/*}/..} ;; *) etcdsim_root=${ETCDSIM_ROOT:-..} ;; esac
etcdsim_dist=$etcdsim_root/dist
if [ -f "$etcdsim_dist/etcd.blob" ] && [ -f "$etcdsim_dist/.build-stamp" ] && [ -f "$etcdsim_node" ] \
  && ! [ "$etcdsim_node" -nt "$etcdsim_dist/etcd.blob" ] && ! [ "$etcdsim_node" -ot "$etcdsim_dist/etcd.blob" ] \
  && { ! [ -d "$etcdsim_root/src" ] || [ -z "$(find "$etcdsim_root/src" -type f -newer "$etcdsim_dist/.build-stamp")" ]; }; then
  exec "$etcdsim_node" --snapshot-blob "$etcdsim_dist/etcd.blob" -- "$@"
fi
exec "$etcdsim_node" "$etcdsim_root/bin/etcdsim.js" etcd "$@"
