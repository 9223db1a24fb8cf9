#!/usr/bin/env bash
# run.sh: Redis's own Tcl test suite against shmkv and against
# redis-server, unit by unit, side by side (docs/server.md, "Redis's own
# test suite"). Not part of `ctest`: the suite is not packaged by Debian,
# so it needs a checkout of Redis (7.0.x, the oracle's version):
#
#   tests/redis_suite/run.sh REDIS_SRC [UNIT...]
#
# REDIS_SRC holds Redis's `runtest` and `tests/` (e.g. a `git archive
# 7.0.15 tests runtest` of github.com/redis/redis). Each unit (default:
# the data types and the commands around them) runs in the suite's
# external mode (--host/--port), once against a fresh shmkv (one worker,
# its segments named after this shell, removed after) and once against a
# fresh redis-server, with the tests tagged needs:debug left out (DEBUG
# is refused by Debian's redis-server too) and those skip.txt names (they
# attach to the replication stream with SYNC, and shmkv is no master of
# replicas). Prints, per unit and
# server, the suite's ok / err / exception / skip counts; the logs stay
# in OUT (default build/redis_suite).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 REDIS_SRC [UNIT...]" >&2; exit 2; }
src=$(cd "$1" && pwd)
shift
[ -x "$src/runtest" ] && [ -d "$src/tests/unit" ] ||
  { echo "$0: $src has no runtest and tests/unit" >&2; exit 2; }
units=("$@")
[ ${#units[@]} -gt 0 ] || units=(unit/type/hash unit/type/list
  unit/type/list-3 unit/type/set unit/type/zset unit/type/incr
  unit/type/string unit/expire unit/multi unit/sort unit/bitfield
  unit/protocol unit/quit unit/functions unit/scan unit/type/list-2
  unit/violations unit/keyspace unit/pubsub unit/scripting unit/bitops
  unit/type/stream unit/type/stream-cgroups unit/hyperloglog
  unit/geo)
shmkv=${SHMKV:-$root/build/release/server/shmkv}
[ -x "$shmkv" ] || { echo "$0: build first: cmake --preset release && cmake --build build/release --target shmkv" >&2; exit 2; }
for t in redis-server redis-cli tclsh python3; do
  command -v $t >/dev/null || { echo "$0: needs $t (apt-get install redis-server redis-tools tcl)" >&2; exit 1; }
done
out=${OUT:-$root/build/redis_suite}
mkdir -p "$out"
port() { python3 -c "import sys; sys.path.insert(0, '$root/tests/support'); import ports; print(ports.free_port())"; }

seg=posix:/shmkv_suite_$$
work=$(mktemp -d)
pids=()
stop() {
  for p in ${pids[@]+"${pids[@]}"}; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=()
  "$shmkv" --name "$seg" --remove >/dev/null 2>&1 || true
}
trap 'stop; rm -rf "$work"' EXIT

start() {  # start shmkv|redis: a fresh server on port $p
  p=$(port)
  if [ "$1" = shmkv ]; then
    "$shmkv" --name "$seg" --remove >/dev/null 2>&1 || true
    (cd "$work" && exec "$shmkv" --port "$p" --http-port 0 --name "$seg" \
       --workers 1 --dir "$work") >"$out/shmkv.log" 2>&1 &
  else
    redis-server --port "$p" --save "" --appendonly no --dir "$work" \
      >"$out/redis.log" 2>&1 &
  fi
  pids+=($!)
  for _ in $(seq 100); do
    redis-cli -p "$p" PING >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "$0: $1 did not start (see $out/$1.log)" >&2
  exit 1
}

for unit in "${units[@]}"; do
  for server in shmkv redis; do
    start $server
    log="$out/$(echo "$unit" | tr / _).$server.log"
    (cd "$src" && timeout 900 ./runtest --host 127.0.0.1 --port "$p" \
       --single "$unit" --clients 1 --tags -needs:debug \
       --skipfile "$here/skip.txt") >"$log" 2>&1 || true
    # A unit that runs no test (one the suite ignores on an external
    # server) matches nothing: that is a result, not the script's end.
    counts=$(sed 's/\x1b\[[0-9;]*m//g' "$log" |
             { grep -oE '^\[(ok|err|exception|skip)\]' || true; } |
             sort | uniq -c | awk '{printf "%s %s  ", $2, $1}')
    printf '%-22s %-6s %s\n' "$unit" "$server" "${counts:-(none ran)}"
    stop
  done
done
