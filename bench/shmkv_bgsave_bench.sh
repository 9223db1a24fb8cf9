#!/usr/bin/env bash
# shmkv_bgsave_bench.sh: what BGSAVE costs the writers and the memory of
# shmkv (a logging copy, server/store/cow.h) and of redis-server (a
# fork), in the same run, with the same client (bench/bgsave_stall.py):
# KEYS keys of 100 bytes, then one client writing SET to random keys one
# request at a time while a BGSAVE runs; BGSAVE's own reply time and
# the slowest write pending while it was (held_us: how long starting the
# save held writers; Redis forks the whole server in it, shmkv forks the
# worker outside the write lock); each write's latency before,
# during and after the save, the save's time, the copy-on-write bytes
# each server reports (rdb_last_cow_size: shmkv's log on disk, Redis's
# copied pages) and each server's memory (the sum of its processes'
# proportional set sizes) before and at its peak during the save.
#
#   bench/shmkv_bgsave_bench.sh [--keys N] [--seconds S] [--runs R]
#                               [--out DIR]
#
# Needs redis-server and a release build (build/release/server/shmkv).
# Writes DIR/shmkv_bgsave_bench.txt (build/shmkv_bench by default): one
# JSON line per run and server, then a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
keys=1000000
seconds=6
runs=3
out=build/shmkv_bench
while [ $# -gt 0 ]; do
  case $1 in
    --keys) keys=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--keys N] [--seconds S] [--runs R] [--out DIR]" >&2
       exit 2 ;;
  esac
done
mkdir -p "$out"
dir=$(mktemp -d)
redis_extra=(--dir "$dir/redis")
mkdir -p "$dir/redis" "$dir/shmkv"
. bench/server_pair.sh
memory=$(( (keys * 320 / 1048576 + 64) ))M
start_server_pair bgsave --dir "$dir/shmkv" --capacity $((keys * 2)) \
  --memory "$memory"
trap 'stop_server_pair; rm -rf "$dir"' EXIT
result=$out/shmkv_bgsave_bench.txt
{
  echo "# $(date -u +%FT%TZ) keys=$keys seconds=$seconds runs=$runs"
  echo "# $(nproc) CPUs; redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')"
} > "$result"
for run in $(seq "$runs"); do
  for target in redis shmkv; do
    if [ $target = redis ]; then port=$redis_port pid=$redis_pid
    else port=$kv_port pid=$kv_pid; fi
    line=$(python3 bench/bgsave_stall.py "$port" "$keys" "$seconds" "$pid")
    echo "run=$run target=$target $line" | tee -a "$result"
  done
done
python3 - "$result" <<'EOF' | tee -a "$result"
import json, sys
rows = {}
for ln in open(sys.argv[1]):
    if not ln.startswith("run="):
        continue
    head, js = ln.split(" {", 1)
    target = head.split()[1].split("=")[1]
    rows.setdefault(target, []).append(json.loads("{" + js))
print("# median over runs (latencies in us; memory in MiB)")
print("%-6s %8s %9s %9s %9s %9s %9s %9s %9s %10s %10s" % (
    "server", "save_ms", "bgsave_us", "held_us", "p99_bef", "p99_dur",
    "p999_dur", "max_bef", "max_dur", "cow_MiB", "extra_MiB"))
med = lambda xs: sorted(xs)[len(xs) // 2]
for t, rs in rows.items():
    print("%-6s %8.0f %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %10.1f %10.1f" % (
        t, med([r["save_ms"] for r in rs]), med([r["bgsave_us"] for r in rs]),
        med([r["held_us"] for r in rs]),
        med([r["before"]["p99"] for r in rs]),
        med([r["during"]["p99"] for r in rs]),
        med([r["during"]["p999"] for r in rs]),
        med([r["before"]["max"] for r in rs]),
        med([r["during"]["max"] for r in rs]),
        med([r["cow_bytes"] for r in rs]) / 2**20,
        med([r["pss_peak"] - r["pss_before"] for r in rs]) / 2**20))
EOF
