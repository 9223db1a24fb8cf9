#!/usr/bin/env bash
# shmkv_ab.sh: one command's worker CPU per request on two shmkv builds,
# run in turn (base, new, base, new, ...) so that both meet the same
# machine: how a change is measured before it is kept (bench/RESULTS.md
# names this script beside each such figure).
#
#   bench/shmkv_ab.sh --base BIN --new BIN [--runs N] [--requests N]
#                     [--fill PYTHON_FILE ARG] -- REDIS_BENCHMARK_ARGS...
#
# Each run starts the build with one worker (pinned to CPU 0, its
# segments named after this shell), optionally fills it with the RESP a
# Python script prints (e.g. bench/fill_list.py 1100000), then runs
# redis-benchmark (pinned to CPU 1, -c 10 -P 16 unless the arguments say
# otherwise) and prints the worker's user + system time per request, in
# microseconds.
#   bench/shmkv_ab.sh --base /tmp/shmkv.old --new build/release/server/shmkv \
#     --requests 1000000 -- -t lpush
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/ports.sh  # free_port

base="" new="" runs=3 requests=1000000 fill=()
while [ $# -gt 0 ]; do
  case "$1" in
    --base) base=$2; shift 2 ;;
    --new) new=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --fill) fill=("$2" "$3"); shift 3 ;;
    --) shift; break ;;
    *) echo "usage: $0 --base BIN --new BIN [--runs N] [--requests N] [--fill PY ARG] -- ARGS" >&2; exit 2 ;;
  esac
done
[ -x "$base" ] && [ -x "$new" ] || { echo "$0: --base and --new must be shmkv binaries" >&2; exit 2; }
for t in redis-benchmark redis-cli taskset python3; do
  command -v $t >/dev/null || { echo "$0: needs $t" >&2; exit 1; }
done

hz=$(getconf CLK_TCK)
seg=posix:/shmkv_ab_$$
pid=""
stop() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=""
  fi
  "$base" --name "$seg" --remove >/dev/null 2>&1 || true
}
trap stop EXIT

for _ in $(seq "$runs"); do
  for side in base new; do
    bin=$base
    [ $side = new ] && bin=$new
    port=$(free_port)
    "$bin" --port "$port" --http-port 0 --name "$seg" --workers 1 \
      --capacity 4000000 --memory 2G --journal-size 256M 2>/dev/null &
    pid=$!
    for _ in $(seq 100); do
      redis-cli -p "$port" PING >/dev/null 2>&1 && break
      sleep 0.05
    done
    worker=$(pgrep -P "$pid" | head -1)
    taskset -pc 0 "$pid" >/dev/null
    taskset -pc 0 "$worker" >/dev/null
    if [ ${#fill[@]} -gt 0 ]; then
      python3 "${fill[0]}" "${fill[1]}" | redis-cli -p "$port" --pipe >/dev/null
    fi
    t0=$(awk '{print $14 + $15}' "/proc/$worker/stat")
    taskset -c 1 redis-benchmark -p "$port" -n "$requests" -c 10 -P 16 "$@" \
      >/dev/null 2>&1
    t1=$(awk '{print $14 + $15}' "/proc/$worker/stat")
    echo "$side $(python3 -c "print(round(($t1 - $t0) * 1e6 / $hz / $requests, 2))")"
    stop
  done
done
