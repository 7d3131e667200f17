#!/usr/bin/env bash
# twemproxy (nutcracker) in front of three Vermilion primaries on loopback: ketama hashing,
# Redis protocol. Runs a short redis-benchmark and a script through the proxy, then waits for
# Ctrl-C (ONESHOT=1: exits instead).
#
#   scripts/ha/proxy-demo.sh
#
# Ports: BASE (7600) for the proxy, BASE+1..BASE+3 for the primaries, BASE+10 for the proxy's
# stats. Needs nutcracker and redis-tools (apt-get install nutcracker redis-tools).
set -euo pipefail
BASE=${BASE:-7600}
. "$(dirname "$0")/common.sh"

servers=""
for i in 1 2 3; do
  p=$((BASE + i))
  mkdir -p "$DIR/$p"
  "$VBIN" --port "$p" --dir "$DIR/$p" --logfile "$DIR/$p/log" &
  PIDS+=($!)
  up "$p"
  servers="$servers   - 127.0.0.1:$p:1 vermilion$i"$'\n'
done
cat >"$DIR/nutcracker.yml" <<CONF
vermilion:
  listen: 127.0.0.1:$BASE
  hash: fnv1a_64
  distribution: ketama
  redis: true
  auto_eject_hosts: false
  servers:
$servers
CONF
nutcracker -c "$DIR/nutcracker.yml" -s $((BASE + 10)) -o "$DIR/nutcracker.log" -p "$DIR/nutcracker.pid" &
PIDS+=($!)
up "$BASE"
echo "proxy: redis-cli -p $BASE   (config: $DIR/nutcracker.yml)"
redis-cli -p "$BASE" mset a 1 b 2 c 3 d 4 >/dev/null
redis-cli -p "$BASE" eval "return redis.call('incrby', KEYS[1], ARGV[1])" 1 counter 5
for i in 1 2 3; do echo "primary $((BASE + i)): $(redis-cli -p $((BASE + i)) dbsize) keys"; done
redis-benchmark -p "$BASE" -t set,get -n 20000 -q 2>/dev/null | tr '\r' '\n' | grep 'requests per second'
[ "${ONESHOT:-0}" = 1 ] && exit 0
echo "Ctrl-C stops everything"
wait
