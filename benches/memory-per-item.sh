#!/usr/bin/env bash
# Memory per item, redis-server against vermilion-server, both started fresh for every row
# with the same settings (no persistence): a Lua loop of writes (EVAL, 10,000 writes per
# call), then per item the growth of each server's resident set (/proc/PID/statm) and of its
# own INFO used_memory (the allocator's view), one second after the writes and again after
# MEMORY PURGE. Issue 37's table.
#
# Usage: benches/memory-per-item.sh            env: ROWS (default: all), SCALE (1: the
#   issue's sizes, 1M or 200k keys; 0.1 for a quick run)
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/common.sh
cargo build --release --quiet --bin vermilion-server
SCALE=${SCALE:-1}
ROWS=${ROWS:-"string small_hash small_set list_element set_member zset_member big_hash_field list_of_5 zset_of_5"}
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  local rc=$?
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  [ "$rc" = 0 ] || tail -n 5 "$WORK"/*.log 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# row NAME -> "items script" (the script writes items ARGV[1]..ARGV[2]; one item per i)
row_def() {
  case $1 in
    string) echo "1000000|for i=ARGV[1],ARGV[2] do redis.call('SET','key:'..i,'0123456789') end" ;;
    small_hash) echo "200000|for i=ARGV[1],ARGV[2] do redis.call('HSET','h:'..i,'f1','v1','f2','v2','f3','v3') end" ;;
    small_set) echo "200000|for i=ARGV[1],ARGV[2] do redis.call('SADD','s:'..i,'m1','m2','m3','m4','m5') end" ;;
    list_element) echo "1000000|for i=ARGV[1],ARGV[2] do redis.call('RPUSH','biglist','element:'..i) end" ;;
    set_member) echo "1000000|for i=ARGV[1],ARGV[2] do redis.call('SADD','bigset','member:'..i) end" ;;
    zset_member) echo "1000000|for i=ARGV[1],ARGV[2] do redis.call('ZADD','bigz',i,'member:'..i) end" ;;
    big_hash_field) echo "1000000|for i=ARGV[1],ARGV[2] do redis.call('HSET','bighash','field:'..i,'value') end" ;;
    list_of_5) echo "1000000|for i=ARGV[1],ARGV[2] do redis.call('RPUSH','l:'..i,'a','b','c','d','e') end" ;;
    zset_of_5) echo "1000000|for i=ARGV[1],ARGV[2] do redis.call('ZADD','z:'..i,1,'a',2,'b',3,'c',4,'d',5,'e') end" ;;
  esac
}

start() { # name binary -> sets P_<name> and PID_<name>
  local name=$1 bin=$2 p
  p=$(port)
  mkdir -p "$WORK/$name"
  (cd "$WORK/$name" && exec "${SERVER_CPU[@]}" "$bin" --port "$p" --save '' --appendonly no --loglevel warning) >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  ready "$p"
  eval "P_$name=$p PID_$name=$!"
}
rss() { awk '{print $2 * 4096}' "/proc/$1/statm"; }
used() { redis-cli -p "$1" info memory | awk -F: '/^used_memory:/ {print $2+0}'; }

printf '%-15s %8s | %-29s | %-29s | %s\n' row items "redis rss / used (B/item)" "vermilion rss / used (B/item)" "rss ratio (after purge)"
for row in $ROWS; do
  IFS='|' read -r n script <<<"$(row_def "$row")"
  n=$(python3 -c "print(max(1000, int($n * $SCALE)))")
  declare -A out=()
  for s in redis ours; do
    if [ $s = redis ]; then start redis redis-server; else start ours "$PWD/target/release/vermilion-server"; fi
    eval "p=\$P_$s pid=\$PID_$s"
    r0=$(rss "$pid"); u0=$(used "$p")
    for ((lo = 1; lo <= n; lo += 10000)); do
      hi=$((lo + 9999 < n ? lo + 9999 : n))
      redis-cli -p "$p" eval "$script" 0 "$lo" "$hi" >/dev/null
    done
    sleep 1
    r1=$(rss "$pid"); u1=$(used "$p")
    redis-cli -p "$p" memory purge >/dev/null
    sleep 0.2
    r2=$(rss "$pid"); u2=$(used "$p")
    out[$s]=$(python3 -c "n=$n; print('%6.1f %6.1f / %6.1f' % (($r1-$r0)/n, ($r2-$r0)/n, ($u2-$u0)/n))")
    out[${s}_rss]=$(python3 -c "print(($r2-$r0)/$n)")
    kill "$pid"; wait "$pid" 2>/dev/null || true
  done
  printf '%-15s %8d | %-29s | %-29s | %.2f\n' "$row" "$n" "${out[redis]}" "${out[ours]}" \
    "$(python3 -c "print(${out[ours_rss]} / ${out[redis_rss]} if ${out[redis_rss]} else 0)")"
  unset out
done
echo "(each side: RSS growth per item 1 s after the writes, then after MEMORY PURGE / INFO used_memory growth after MEMORY PURGE)"
