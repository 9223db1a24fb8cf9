#!/usr/bin/env bash
# shmkv_types_cpu.sh: the server CPU time per request of the collection
# commands, shmkv next to redis-server in the same run, at pipeline depths
# 1 and 16 (issue 44's "server CPU per request").
#
#   bench/shmkv_types_cpu.sh [--requests N] [--clients C] [--out DIR]
#                            [--commands "PFADD PFCOUNT ..."]
#
# Both servers come from bench/server_pair.sh (redis-server without
# persistence; a release shmkv with one worker). Each serving process
# (redis-server, shmkv's worker) is pinned to CPU 0 and redis-benchmark to
# CPU 1. For each depth, the commands run in this order on both servers:
# HSET and HGET on one hash, LPUSH then RPOP on one list, SADD on one set,
# ZADD then ZRANGE 0 9 on one sorted set (members and fields drawn from
# 10,000 with -r, as redis-benchmark's own -t tests do). --commands runs
# the named ones instead, in the table's order: besides those, PFADD and
# PFCOUNT on one HyperLogLog, GEOADD (points drawn near one place) and
# GEOSEARCH (the ten nearest within 1 km: the points GEOADD drew lie
# within a millimetre, so every search finds all of them and sorts them)
# on one geospatial set. A server's CPU is
# its user + system ticks (/proc/PID/stat) over the client's run, divided
# by the requests. Writes DIR/types_cpu.csv: command, pipeline, requests,
# shmkv's and redis's microseconds per request, and their ratio.
#
# Needs redis-server, redis-benchmark (redis-tools), taskset and a release
# build.
set -euo pipefail
cd "$(dirname "$0")/.."

requests=200000
clients=50
out=build/shmkv_types_cpu
only="HSET HGET LPUSH RPOP SADD ZADD ZRANGE"
while [ $# -gt 0 ]; do
  case "$1" in
    --requests) requests=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --commands) only=$2; shift 2 ;;
    *) echo "usage: $0 [--requests N] [--clients C] [--out DIR] [--commands LIST]" >&2; exit 2 ;;
  esac
done
for tool in redis-server redis-benchmark redis-cli taskset; do
  command -v "$tool" >/dev/null || { echo "$0: $tool not installed" >&2; exit 1; }
done
[ "$(nproc)" -ge 2 ] || { echo "$0: needs two CPUs" >&2; exit 1; }

. bench/server_pair.sh
start_server_pair types_cpu
kv_worker=""
for _ in $(seq 100); do
  kv_worker=$(pgrep -P "$kv_pid" | head -1 || true)
  [ -n "$kv_worker" ] && break
  sleep 0.1
done
[ -n "$kv_worker" ] || { echo "$0: no shmkv worker" >&2; exit 1; }
taskset -pc 0 "$redis_pid" >/dev/null
taskset -pc 0 "$kv_worker" >/dev/null
hz=$(getconf CLK_TCK)

# name | share of --requests (a divisor) | command. The sorted-set
# commands run a tenth as many: shmkv keeps a sorted set in one packed
# value for now, so each costs in proportion to its 10,000 members.
commands=(
  "HSET|1|hset myhash element:__rand_int__ xxx"
  "HGET|1|hget myhash element:__rand_int__"
  "LPUSH|1|lpush mylist xxx"
  "RPOP|1|rpop mylist"
  "SADD|1|sadd myset element:__rand_int__"
  "ZADD|10|zadd myzset __rand_int__ element:__rand_int__"
  "ZRANGE|10|zrange myzset 0 9"
  "PFADD|1|pfadd myhll element:__rand_int__"
  "PFCOUNT|1|pfcount myhll"
  "GEOADD|1|geoadd mygeo 13.__rand_int__ 38.__rand_int__ element:__rand_int__"
  "GEOSEARCH|100|geosearch mygeo fromlonlat 13 38 byradius 1 km count 10 asc"
)

# us_per_request PORT PID N COMMAND... : the server's CPU per request.
us_per_request() {
  local port=$1 pid=$2 n=$3
  shift 3
  local t0 t1
  t0=$(ticks "$pid")
  # shellcheck disable=SC2068
  taskset -c 1 redis-benchmark -p "$port" -n "$n" -c "$clients" \
    -P "$depth" -r 10000 -q $@ >/dev/null
  t1=$(ticks "$pid")
  awk -v d=$((t1 - t0)) -v hz="$hz" -v n="$n" \
    'BEGIN { printf "%.3f", d / hz * 1e6 / n }'
}

mkdir -p "$out"
csv="$out/types_cpu.csv"
echo "command,pipeline,requests,shmkv_us,redis_us,ratio" > "$csv"
for depth in 1 16; do
  for entry in "${commands[@]}"; do
    IFS='|' read -r name share cmd <<< "$entry"
    [[ " $only " == *" $name "* ]] || continue
    n=$((requests / share))
    # shellcheck disable=SC2086
    kv=$(us_per_request "$kv_port" "$kv_worker" "$n" $cmd)
    # shellcheck disable=SC2086
    rd=$(us_per_request "$redis_port" "$redis_pid" "$n" $cmd)
    ratio=$(awk -v a="$kv" -v b="$rd" \
      'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "inf" }')
    echo "$name,$depth,$n,$kv,$rd,$ratio" | tee -a "$csv"
  done
done
echo "wrote $csv"
