#!/usr/bin/env bash
# Throughput through twemproxy (nutcracker 0.5.0, ketama, redis: true) in front of three
# redis-server primaries and in front of three Vermilion primaries, in the same run, the two
# pools alternating within each round, the best of ROUNDS rounds. Beside each figure: the
# backends' CPU per request (the three servers' utime+stime from /proc, microseconds).
# The servers run on CPU 1, the proxy and redis-benchmark on CPU 0 (PIN=0: unpinned).
#
#   benches/compare-proxy.sh
#
# Environment: ROUNDS (3), N (requests per run, 100000), CLIENTS (50), PIPELINES ("1 16"),
# TESTS ("SET GET INCR LPUSH HSET EVAL").
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/common.sh

ROUNDS=${ROUNDS:-3}
N=${N:-100000}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
TESTS=${TESTS:-"SET GET INCR LPUSH HSET EVAL"}
VBIN=${VBIN:-target/release/vermilion-server}
[ -x "$VBIN" ] || cargo build --release --quiet --bin vermilion-server
VBIN=$(realpath "$VBIN")
command -v nutcracker >/dev/null || { echo "needs nutcracker (apt-get install nutcracker)"; exit 1; }

TMP=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT

# pool NAME BINARY: three servers and a proxy; sets PROXY_NAME and SPIDS_NAME.
pool() {
  local name=$1 bin=$2 servers="" spids="" i p
  for i in 1 2 3; do
    p=$(port)
    mkdir -p "$TMP/$name$i"
    (cd "$TMP/$name$i" && exec "${SERVER_CPU[@]}" "$bin" --port "$p" --save '' --appendonly no --loglevel warning) >/dev/null 2>&1 &
    PIDS+=($!)
    spids="$spids $!"
    ready "$p"
    servers="$servers   - 127.0.0.1:$p:1 s$i"$'\n'
  done
  p=$(port)
  printf 'pool:\n  listen: 127.0.0.1:%s\n  hash: fnv1a_64\n  distribution: ketama\n  redis: true\n  auto_eject_hosts: false\n  servers:\n%s' \
    "$p" "$servers" >"$TMP/$name.yml"
  "${CLIENT_CPU[@]}" nutcracker -c "$TMP/$name.yml" -s "$(port)" -o "$TMP/$name.log" -p "$TMP/$name.pid" &
  PIDS+=($!)
  ready "$p"
  eval "PROXY_$name=$p SPIDS_$name='$spids'"
}

cpu_sum() { local t=0 pid; for pid in $1; do t=$((t + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done; echo $t; }

# One run: prints "requests/s us-of-backend-CPU-per-request".
run() {
  local p=$1 pids=$2 test=$3 pipe=$4 before after rps args
  case $test in
    SET) args=(set "key:__rand_int__" xxx) ;;
    GET) args=(get "key:__rand_int__") ;;
    INCR) args=(incr "counter:__rand_int__") ;;
    LPUSH) args=(lpush "list:__rand_int__" xxx) ;;
    HSET) args=(hset "hash:__rand_int__" f xxx) ;;
    EVAL) args=(eval "redis.call('set', KEYS[1], ARGV[1]) return 1" 1 "key:__rand_int__" v) ;;
  esac
  before=$(cpu_sum "$pids")
  rps=$("${CLIENT_CPU[@]}" redis-benchmark -p "$p" -n "$N" -c "$CLIENTS" -P "$pipe" -r 100000 -q --csv "${args[@]}" 2>/dev/null |
    tail -1 | awk -F'"' '{print $4}')
  after=$(cpu_sum "$pids")
  python3 -c "print('%.0f %.3f' % (float('$rps' or 0), ($after-$before)*1e6/$(getconf CLK_TCK)/$N))"
}

pool redis redis-server
pool ours "$VBIN"
printf '%-6s %3s %12s %9s %12s %9s %9s %9s\n' test P "redis rps" "redis us" "ours rps" "ours us" "rps o/r" "us o/r"
for pipe in $PIPELINES; do
  for test in $TESTS; do
    declare -A rps_best=() us_at=()
    for _ in $(seq "$ROUNDS"); do
      for s in redis ours; do
        eval "p=\$PROXY_$s pids=\$SPIDS_$s"
        read -r rps us < <(run "$p" "$pids" "$test" "$pipe")
        if [ -z "${rps_best[$s]:-}" ] || python3 -c "import sys; sys.exit(0 if $rps > ${rps_best[$s]} else 1)"; then
          rps_best[$s]=$rps us_at[$s]=$us
        fi
      done
    done
    printf '%-6s %3s %12s %9s %12s %9s' "$test" "$pipe" "${rps_best[redis]}" "${us_at[redis]}" "${rps_best[ours]}" "${us_at[ours]}"
    python3 -c "print(' %9.2f %9.2f' % (${rps_best[ours]} / ${rps_best[redis]}, ${us_at[ours]} / ${us_at[redis]}))"
    unset rps_best us_at
  done
done
