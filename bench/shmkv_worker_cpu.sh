#!/usr/bin/env bash
# shmkv_worker_cpu.sh: the CPU one shmkv worker spends per request in user
# space and in the kernel, for pipelined SETs and GETs, optionally against
# another shmkv binary (an older build) in the same runs.
#
#   bench/shmkv_worker_cpu.sh [--binary PATH] [--baseline PATH] [--runs R]
#                             [--requests N] [--sizes "3 1024"]
#
# The worker (one, --workers 1) is pinned to CPU 0 and redis-benchmark to
# CPU 1: `-t set` then `-t get`, -c 50 -P 16, -d SIZE for each size. Its
# user and system time come from /proc/PID/stat before and after each
# client run (100 Hz ticks: N = 1,000,000 requests make the figures move in
# steps of 0.01 us). With -P 16 the kernel's share per request is small,
# so user time is where shmkv's own work per command shows: parsing, the
# transaction, the store, the reply. Binaries alternate within each run
# (the order flips every run), each on a fresh server and segment.
#
# Needs redis-benchmark (redis-tools) and a release build.
set -euo pipefail
cd "$(dirname "$0")/.."

binary=build/release/server/shmkv
baseline=""
runs=3
requests=1000000
sizes="3 1024"
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    *) echo "usage: $0 [--binary PATH] [--baseline PATH] [--runs R] [--requests N] [--sizes \"3 1024\"]" >&2; exit 2 ;;
  esac
done
for tool in redis-benchmark redis-cli; do
  command -v "$tool" >/dev/null || { echo "$0: $tool not installed (redis-tools)" >&2; exit 1; }
done
[ "$(nproc)" -ge 2 ] || { echo "$0: needs two CPUs" >&2; exit 1; }
shmc_tool=build/release/tools/shmc
for b in "$binary" $baseline "$shmc_tool"; do
  [ -x "$b" ] || { echo "$0: $b: build first (cmake --preset release && cmake --build --preset release)" >&2; exit 1; }
done

. bench/ports.sh  # port_in_use, free_port
seg=""  # a fresh segment name per server: an exiting one never meets the next
servers=0
remove_segments() {
  [ -n "$seg" ] || return 0
  "$binary" --name "posix:$seg" --remove >/dev/null 2>&1 || true
}
kv_pid=""
cleanup() {
  [ -n "$kv_pid" ] && kill "$kv_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  remove_segments
}
trap cleanup EXIT
hz=$(getconf CLK_TCK)

# measure LABEL BINARY SIZE: one server, SET then GET; prints a line each.
measure() {
  local label=$1 bin=$2 size=$3 port worker t
  port=$(free_port)
  servers=$((servers + 1))
  seg=/shmkv_cpu_$$_$servers
  remove_segments
  taskset -c 0 "$bin" --port "$port" --http-port 0 --name "$seg" --workers 1 \
    2>/dev/null &
  kv_pid=$!
  for _ in $(seq 100); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  worker=$(pgrep -P "$kv_pid" | head -n 1 || true)
  if [ -z "$worker" ] || [ ! -r "/proc/$worker/stat" ]; then
    echo "$0: $bin did not start a worker on port $port" >&2
    exit 1
  fi
  for t in set get; do
    local u1 s1 u2 s2 rps
    read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$worker/stat")
    rps=$(taskset -c 1 redis-benchmark -p "$port" -t "$t" -d "$size" -P 16 \
            -c 50 -n "$requests" --csv 2>/dev/null | tail -n 1 |
          tr -d '"' | cut -d, -f2)
    read -r u2 s2 < <(awk '{print $14, $15}' "/proc/$worker/stat")
    awk -v l="$label" -v t="$t" -v d="$size" -v r="$rps" -v n="$requests" \
        -v hz="$hz" -v u="$((u2 - u1))" -v s="$((s2 - s1))" \
        'BEGIN { printf "%-9s %-3s %5d B  %10.0f req/s  user %.2f us  sys %.2f us\n",
                 l, t, d, r, u * 1e6 / hz / n, s * 1e6 / hz / n }'
  done
  kill "$kv_pid"
  wait "$kv_pid" 2>/dev/null || true
  kv_pid=""
  remove_segments
}

echo "# one pinned worker, redis-benchmark -c 50 -P 16 -n $requests; CPU per request"
for run in $(seq "$runs"); do
  echo "## run $run"
  for size in $sizes; do
    order="binary"
    [ -n "$baseline" ] && order="binary baseline"
    [ -n "$baseline" ] && [ $((run % 2)) -eq 0 ] && order="baseline binary"
    for which in $order; do
      if [ "$which" = binary ]; then
        measure this "$binary" "$size"
      else
        measure baseline "$baseline" "$size"
      fi
    done
  done
done
