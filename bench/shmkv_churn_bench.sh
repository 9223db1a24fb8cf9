#!/usr/bin/env bash
# shmkv_churn_bench.sh: what a store holds after rewrites, shmkv beside
# redis-server (Debian's, persistence off) given the same writes in the
# same run.
#
# redis-benchmark sends N LPUSHes to one list, N ZADDs and N HSETs of
# random members (-r N) to one sorted set and one hash, pipelined, to
# each server. Each write rewrites a part of its collection a little
# larger than before, the pattern that leaves free space among the
# values of a pool. Reported, in MB:
#   redis: used_memory, and used_memory_rss (what the process holds);
#   shmkv: used_memory (what the values take), the value pool's held
#          space (INFO value_pool_reserved: the pages the pool reserved,
#          free extents and the reserve step included) and its top (the
#          extent pool's granules below its top, free ones included).
#
#   bench/shmkv_churn_bench.sh [--requests N] [--value-pool nodes|extents]
#                              [--out DIR]
#
# Needs redis-server, redis-tools and python3, and a release build.
set -euo pipefail
cd "$(dirname "$0")/.."

requests=1000000
pool=extents
out=build/shmkv_churn_bench
while [ $# -gt 0 ]; do
  case "$1" in
    --requests) requests=$2; shift 2 ;;
    --value-pool) pool=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--requests N] [--value-pool P] [--out DIR]" >&2; exit 2 ;;
  esac
done
. bench/server_pair.sh  # start_server_pair
start_server_pair shmkv_churn_bench --capacity 1000000 --memory 1G \
  --value-pool "$pool"

field() {  # field PORT NAME: one INFO memory field
  redis-cli -p "$1" INFO memory | tr -d '\r' | sed -n "s/^$2://p"
}
for port in $redis_port $kv_port; do
  redis-benchmark -p "$port" -n "$requests" -r "$requests" -P 16 -q \
    -t lpush,zadd,hset >/dev/null
done
mkdir -p "$out"
python3 - "$out/churn.csv" "$pool" "$requests" \
  "$(field $redis_port used_memory)" "$(field $redis_port used_memory_rss)" \
  "$(field $kv_port used_memory)" "$(field $kv_port value_pool_reserved)" \
  "$(field $kv_port value_pool_top)" <<'EOF'
import sys
path, pool, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
r_used, r_rss, k_used, k_held, k_top = (int(x or 0) for x in sys.argv[4:9])
mb = lambda b: b / 1e6
print("%d writes each: redis used %.1f MB (rss %.1f MB); shmkv on %s: "
      "used %.1f MB, top %.1f MB, held %.1f MB (%.2fx redis's rss)" %
      (n, mb(r_used), mb(r_rss), pool, mb(k_used), mb(k_top), mb(k_held),
       k_held / r_rss))
with open(path, "w") as f:
    f.write("pool,writes,redis_used,redis_rss,shmkv_used,shmkv_top,"
            "shmkv_held\n")
    f.write("%s,%d,%d,%d,%d,%d,%d\n" %
            (pool, n, r_used, r_rss, k_used, k_top, k_held))
EOF
