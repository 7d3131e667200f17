#!/usr/bin/env bash
# Starts a Redis Cluster on loopback and joins it with the real `redis-cli --cluster create`.
#
#   scripts/cluster/start.sh            6 Vermilion nodes on 30001-30006: 3 masters, 3 replicas
#   scripts/cluster/start.sh stop       stops the nodes started from the same DIR
#
# Environment (all optional):
#   PORTS      client ports, space-separated (default: 30001 .. 30000+NODES)
#   CPORTS     bus ports, same order (default: each port + 10000)
#   NODES      how many nodes when PORTS is not given (default 6)
#   REPLICAS   replicas per master (default 1)
#   REDIS      1-based positions of nodes run by redis-server instead (a mixed cluster),
#              e.g. REDIS="1 5"
#   DIR        where each node keeps its files, in DIR/<port>/ (default /tmp/vermilion-cluster)
#   BIN        the Vermilion binary (default: target/release/vermilion-server, built if absent)
#   TIMEOUT    cluster-node-timeout in ms (default 5000)
#   EXTRA      more arguments for every node
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${DIR:-/tmp/vermilion-cluster}
NODES=${NODES:-6}
REPLICAS=${REPLICAS:-1}
TIMEOUT=${TIMEOUT:-5000}
REDIS=${REDIS:-}
EXTRA=${EXTRA:-}
if [ -z "${PORTS:-}" ]; then PORTS=$(seq -s ' ' 30001 $((30000 + NODES))); fi
read -r -a ports <<<"$PORTS"
read -r -a cports <<<"${CPORTS:-}"

if [ "${1:-}" = stop ]; then
  for p in "${ports[@]}"; do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true; done
  exit 0
fi

BIN=${BIN:-$PWD/target/release/vermilion-server}
if [ ! -x "$BIN" ]; then cargo build --release --bin vermilion-server; fi
BIN=$(realpath "$BIN")

addrs=()
for i in "${!ports[@]}"; do
  p=${ports[$i]}
  cp=${cports[$i]:-$((p + 10000))}
  bin=$BIN
  for r in $REDIS; do if [ "$r" = $((i + 1)) ]; then bin=redis-server; fi; done
  rm -rf "${DIR:?}/$p" && mkdir -p "$DIR/$p"
  # shellcheck disable=SC2086
  (cd "$DIR/$p" && exec "$bin" --port "$p" --cluster-enabled yes --cluster-port "$cp" \
    --cluster-config-file nodes.conf --cluster-node-timeout "$TIMEOUT" --save '' \
    --appendonly no --logfile "$DIR/$p/log" $EXTRA) </dev/null >/dev/null 2>&1 &
  addrs+=("127.0.0.1:$p")
done
for p in "${ports[@]}"; do
  for _ in $(seq 1 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$REPLICAS" --cluster-yes
# Replicas attach after the join; wait until every node says the cluster is ok.
for p in "${ports[@]}"; do
  for _ in $(seq 1 100); do
    redis-cli -p "$p" cluster info | grep -q '^cluster_state:ok' && break
    sleep 0.1
  done
done
echo "cluster up: ${addrs[*]}"
