#!/usr/bin/env bash
# two-nodes.sh K1S_BINARY [FOCUS_REGEX] — ../shared/conformance/run.sh with a
# second node: while run.sh's node starts, a `k1s agent` joins it from a
# network namespace of its own, bridged to run.sh's port-less bridge (so
# still nothing can leave the namespaces). For the [Conformance] specs that
# need two schedulable nodes ("Conformance Tests should have at least two
# untainted nodes", "Daemon set should rollback without unnecessary
# restarts"); any focus works, every spec then sees two nodes.
#
#   tests/conformance/two-nodes.sh bin/k1s 'two untainted nodes|rollback without unnecessary restarts'
#
# Knobs: run.sh's (NETNS, NODE_IP, NODE_DEV, DATA_DIR, WORK, RESULTS, ...) and
#   NETNS2=k1sconf2 NODE2_IP=10.250.0.3 NODE2_NAME=k1s-conf2
#   DATA_DIR2=/var/lib/k1s-conformance2 RUN_DIR2=/run/k1s-conf2
# The agent runs in new pid + mount namespaces (its `k1s killall` sees only
# its own processes), with its own data, run and cgroup root; its log is
# $RESULTS/agent2.log. Everything it made is removed at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED:-$(cd "$here/../../../shared/conformance" 2>/dev/null && pwd || echo /work/shared/conformance)}
K1S=$(readlink -f "${1:?usage: two-nodes.sh K1S_BINARY [FOCUS_REGEX]}")
FOCUS=${2:-'\[Conformance\]'}
export WORK=${WORK:-/tmp/conf-build} RESULTS=${RESULTS:-/tmp/conformance-results}
export NETNS=${NETNS:-k1sconf} NODE_IP=${NODE_IP:-10.250.0.2} NODE_DEV=${NODE_DEV:-k1snode0}
export DATA_DIR=${DATA_DIR:-/var/lib/k1s-conformance}
NETNS2=${NETNS2:-k1sconf2} NODE2_IP=${NODE2_IP:-10.250.0.3} NODE2_NAME=${NODE2_NAME:-k1s-conf2}
DATA_DIR2=${DATA_DIR2:-/var/lib/k1s-conformance2} RUN_DIR2=${RUN_DIR2:-/run/k1s-conf2}
IMAGES_DIR=${IMAGES_DIR:-$WORK/images}
# Image GC off on both nodes (the e2e tests' setting): this machine's disk
# reads 85-90 % used to statfs, over the 85 % threshold, and the runner's
# images, imported with `k1s images import` (not pinned), would be
# removed mid-run. Set it to 85 to run with upstream's default.
export K1S_IMAGE_GC_HIGH_THRESHOLD=${K1S_IMAGE_GC_HIGH_THRESHOLD:-100}
mkdir -p "$RESULTS"
log() { echo "[two-nodes.sh $(date -u +%T)] $*" | tee -a "$RESULTS/run.log" >&2; }

RUN_PID= AGENT_PID=
cleanup() {
  set +e
  if [ -n "$AGENT_PID" ] && kill -0 "$AGENT_PID" 2>/dev/null; then
    kill -TERM "$AGENT_PID"; sleep 40
    kill -0 "$AGENT_PID" 2>/dev/null && kill -KILL "$AGENT_PID"
  fi
  ip netns del "$NETNS2" 2>/dev/null
  rm -rf "$DATA_DIR2"
  log "second node removed (netns $NETNS2, $DATA_DIR2)"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$shared/run.sh" "$K1S" "$FOCUS" &
RUN_PID=$!

# The first node's join token appears once its server has started.
for _ in $(seq 1 300); do
  [ -s "$DATA_DIR/server/token" ] && ip netns list | grep -qw "$NETNS" && break
  kill -0 "$RUN_PID" 2>/dev/null || { wait "$RUN_PID"; exit $?; }
  sleep 1
done
[ -s "$DATA_DIR/server/token" ] || { log "no join token in $DATA_DIR/server"; wait "$RUN_PID"; exit 1; }
token=$(cat "$DATA_DIR/server/token")

ip netns add "$NETNS2"
ip -n "$NETNS2" link set lo up
ip link add k1sc2h type veth peer name eth0 netns "$NETNS2"
ip link set k1sc2h netns "$NETNS"
ip -n "$NETNS" link set k1sc2h master "$NODE_DEV" up
ip -n "$NETNS2" addr add "$NODE2_IP/24" dev eth0
ip -n "$NETNS2" link set eth0 up
ip -n "$NETNS2" route add default dev eth0
mkdir -p "$DATA_DIR2/agent/images"
for f in "$IMAGES_DIR"/*.tar; do ln -f "$f" "$DATA_DIR2/agent/images/" 2>/dev/null || cp "$f" "$DATA_DIR2/agent/images/"; done
log "second node $NODE2_NAME at $NODE2_IP joins https://$NODE_IP:6443 (log $RESULTS/agent2.log)"

export K1S DATA_DIR2 RUN_DIR2 NODE2_IP NODE2_NAME NODE_IP RESULTS token
unshare --pid --fork --kill-child=SIGTERM --mount-proc --propagation private \
  nsenter --net="/run/netns/$NETNS2" -- bash -c '
    mkdir -p "$RUN_DIR2" /var/log/pods
    mount -t tmpfs -o mode=755 k1s-conf2-run "$RUN_DIR2"
    mount -t tmpfs -o mode=755 k1s-conf2-podlogs /var/log/pods
    printf "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n" >"$RESULTS/resolv2.conf"
    mount --bind "$RESULTS/resolv2.conf" /etc/resolv.conf
    extra=()
    "$K1S" agent --help 2>&1 | grep -q -- "--cgroup-root" && extra+=(--cgroup-root "/k1s-$NODE2_NAME")
    # pid 1 of the namespace: signals need handlers, and the agent runs in
    # the background so that the handler runs at once.
    trap "\"$K1S\" killall --data-dir \"$DATA_DIR2\" --run-dir \"$RUN_DIR2\" >>\"$RESULTS/agent2.log\" 2>&1" EXIT
    trap "exit 0" TERM INT
    "$K1S" agent --server "https://$NODE_IP:6443" --token "$token" --data-dir "$DATA_DIR2" \
      --run-dir "$RUN_DIR2" --node-name "$NODE2_NAME" --node-ip "$NODE2_IP" "${extra[@]}" >>"$RESULTS/agent2.log" 2>&1 &
    wait $!
  ' &
AGENT_PID=$!

set +e
wait "$RUN_PID"; rc=$?
set -e
log "run.sh exited rc=$rc"
exit $rc
