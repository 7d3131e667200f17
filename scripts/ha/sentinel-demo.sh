#!/usr/bin/env bash
# One Vermilion primary, two Vermilion replicas and three redis-sentinels on loopback.
#
#   scripts/ha/sentinel-demo.sh            # start them, print where they are, wait for Ctrl-C
#   scripts/ha/sentinel-demo.sh failover   # also kill -9 the primary and time the failover
#
# Ports: BASE (7500) for the primary, BASE+1 and BASE+2 for the replicas, BASE+20000..+20002
# for the sentinels. Files in a temporary directory (KEEP=1 keeps it). Needs redis-sentinel
# and redis-cli (apt-get install redis-sentinel redis-tools).
set -euo pipefail
BASE=${BASE:-7500}
. "$(dirname "$0")/common.sh"

# node PORT [PRIMARY_PORT]: a Vermilion node with its own directory and config file (the
# sentinels rewrite it with CONFIG REWRITE).
node() {
  mkdir -p "$DIR/$1"
  {
    echo "port $1"
    echo "dir $DIR/$1"
    echo "appendonly yes"
    echo "min-replicas-to-write 1"
    echo "min-replicas-max-lag 10"
    [ -z "${2:-}" ] || echo "replicaof 127.0.0.1 $2"
  } >"$DIR/$1/vermilion.conf"
  "$VBIN" "$DIR/$1/vermilion.conf" --logfile "$DIR/$1/log" &
  PIDS+=($!)
  up "$1"
}

node "$BASE"
PRIMARY_PID=${PIDS[0]}
node $((BASE + 1)) "$BASE"
node $((BASE + 2)) "$BASE"
for i in 0 1 2; do
  s=$((BASE + 20000 + i))
  mkdir -p "$DIR/s$s"
  cat >"$DIR/s$s/sentinel.conf" <<CONF
port $s
bind 127.0.0.1
dir $DIR/s$s
logfile $DIR/s$s/log
sentinel monitor mymaster 127.0.0.1 $BASE 2
sentinel down-after-milliseconds mymaster 1000
sentinel failover-timeout mymaster 10000
sentinel parallel-syncs mymaster 1
CONF
  redis-sentinel "$DIR/s$s/sentinel.conf" &
  PIDS+=($!)
  up "$s"
done

echo "waiting for the sentinels to discover the replicas and each other..."
for _ in $(seq 300); do
  info=$(redis-cli -p $((BASE + 20000)) sentinel master mymaster | paste -sd' ')
  case "$info" in *"num-slaves 2 "*"num-other-sentinels 2 "*) break ;; esac
  sleep 0.1
done
echo "primary:   redis-cli -p $BASE"
echo "replicas:  redis-cli -p $((BASE + 1)), redis-cli -p $((BASE + 2))"
echo "sentinels: redis-cli -p $((BASE + 20000)) sentinel get-master-addr-by-name mymaster"
redis-cli -p $((BASE + 20000)) sentinel master mymaster | paste - - | grep -E '^(ip|port|num-slaves|num-other-sentinels|quorum)\s'

if [ "${1:-}" = failover ]; then
  # One connection: WAIT counts the replicas that have this client's write.
  printf 'SET before-failover 1\nWAIT 1 0\n' | redis-cli -p "$BASE" >/dev/null
  echo "kill -9 of the primary (port $BASE)"
  start=$(date +%s%N)
  kill -9 "$PRIMARY_PID"
  while :; do
    m=$(redis-cli -p $((BASE + 20000)) sentinel get-master-addr-by-name mymaster | tail -1)
    if [ "$m" != "$BASE" ] && redis-cli -p "$m" set after-failover 1 2>/dev/null | grep -q OK; then break; fi
    sleep 0.05
  done
  echo "first write through the new primary (port $m) $(( ($(date +%s%N) - start) / 1000000 )) ms after the kill"
  redis-cli -p "$m" get before-failover
  echo "restarting the old primary: the sentinels make it a replica of $m"
  "$VBIN" "$DIR/$BASE/vermilion.conf" --logfile "$DIR/$BASE/log" &
  PIDS+=($!)
  for _ in $(seq 300); do
    redis-cli -p "$BASE" info replication 2>/dev/null | grep -q "master_link_status:up" && break
    sleep 0.1
  done
  redis-cli -p "$BASE" role | head -3 | paste -sd' '
  grep replicaof "$DIR/$BASE/vermilion.conf"
  exit 0
fi
echo "Ctrl-C stops everything"
wait
