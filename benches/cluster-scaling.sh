#!/usr/bin/env bash
# Cluster throughput and CPU per request with 1, 2 and 3 primaries (no replicas), Vermilion
# and redis-server clusters of the same shape, side by side in one run:
#
#   benches/cluster-scaling.sh            env: N (requests, 200000), CLIENTS (50),
#                                              PIPELINES ("1 16"), TESTS ("set,get"), ROUNDS (2)
#
# The nodes all run on one core and `redis-benchmark --cluster` on the other (a 2-core
# machine: more primaries cannot add CPU here, so the figure that says how a node scales is
# its CPU per request, from /proc utime+stime summed over the nodes). A cluster of 1 or 2
# primaries is joined by hand (CLUSTER ADDSLOTSRANGE and MEET): `redis-cli --cluster create`
# wants 3, and a single node is driven without --cluster (redis-benchmark wants 2 nodes).
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/common.sh
N=${N:-200000}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
TESTS=${TESTS:-"set,get"}
ROUNDS=${ROUNDS:-2}
release_binary
scratch

start_cluster() { # bin primaries -> PORTS, NODE_PIDS
  local bin=$1 n=$2 i p cp
  PORTS=() NODE_PIDS=()
  for i in $(seq "$n"); do
    p=$(port); cp=$(port)
    mkdir -p "$TMP/$p"
    (cd "$TMP/$p" && exec "${SERVER_CPU[@]}" "$bin" --port "$p" --cluster-enabled yes --cluster-port "$cp" \
      --cluster-config-file nodes.conf --save '' --appendonly no --loglevel warning) >/dev/null 2>&1 &
    NODE_PIDS+=($!) PIDS+=($!)
    PORTS+=("$p")
    ready "$p"
  done
  local per=$((16384 / n)) from=0 to
  for i in $(seq 0 $((n - 1))); do
    to=$((i == n - 1 ? 16383 : from + per - 1))
    redis-cli -p "${PORTS[$i]}" cluster addslotsrange "$from" "$to" >/dev/null
    redis-cli -p "${PORTS[$i]}" cluster set-config-epoch $((i + 1)) >/dev/null
    from=$((to + 1))
  done
  for i in $(seq 1 $((n - 1))); do
    local bus
    bus=$(redis-cli -p "${PORTS[0]}" cluster nodes | awk '/myself/ {split($2, a, "@"); print a[2]}')
    redis-cli -p "${PORTS[$i]}" cluster meet 127.0.0.1 "${PORTS[0]}" "$bus" >/dev/null
  done
  for p in "${PORTS[@]}"; do
    for _ in $(seq 300); do
      redis-cli -p "$p" cluster info | grep -q '^cluster_state:ok' && [ "$(redis-cli -p "$p" cluster info | awk -F: '/known_nodes/ {print $2+0}')" = "$n" ] && break
      sleep 0.05
    done
  done
}

stop_cluster() {
  for p in "${NODE_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${NODE_PIDS[@]}"; do while kill -0 "$p" 2>/dev/null; do sleep 0.05; done; done
}

# One run: prints "rps cpu_us_per_request" for test $1 at pipeline $2.
run() {
  local t=$1 pipe=$2 before=0 after=0 p out rps
  for p in "${NODE_PIDS[@]}"; do before=$((before + $(cpu_ticks "$p"))); done
  # redis-benchmark --cluster wants 2 nodes or more; one node owns every slot anyway.
  local mode=(--cluster)
  [ "${#PORTS[@]}" = 1 ] && mode=()
  out=$("${CLIENT_CPU[@]}" redis-benchmark "${mode[@]}" -p "${PORTS[0]}" -n "$N" -c "$CLIENTS" -P "$pipe" -r 1000000 -t "$t" -q 2>/dev/null | tr '\r' '\n' | grep 'requests per second' | tail -1)
  for p in "${NODE_PIDS[@]}"; do after=$((after + $(cpu_ticks "$p"))); done
  rps=$(echo "$out" | awk '{print $2}')
  python3 -c "tick = 1e6 / $(getconf CLK_TCK); print('%.0f %.2f' % ($rps, ($after - $before) * tick / $N))"
}

printf '%-10s %-4s %-3s %-6s %12s %12s %10s %10s\n' primaries P test "" "redis rps" "verm. rps" "redis us" "verm. us"
for n in 1 2 3; do
  for pipe in $PIPELINES; do
    for t in ${TESTS//,/ }; do
      rr=() vr=() rc=() vc=()
      for _ in $(seq "$ROUNDS"); do
        start_cluster redis-server "$n"; read -r a b < <(run "$t" "$pipe"); stop_cluster; rr+=("$a") rc+=("$b")
        start_cluster "$VBIN" "$n"; read -r a b < <(run "$t" "$pipe"); stop_cluster; vr+=("$a") vc+=("$b")
      done
      python3 - "$n" "$pipe" "$t" "${rr[*]}" "${vr[*]}" "${rc[*]}" "${vc[*]}" <<'PY'
import sys
n, pipe, t = sys.argv[1:4]
rr, vr, rc, vc = ([float(x) for x in a.split()] for a in sys.argv[4:8])
print('%-10s %-4s %-3s %-6s %12.0f %12.0f %10.2f %10.2f' % (n, pipe, t, '', max(rr), max(vr), min(rc), min(vc)))
PY
    done
  done
done
