#!/usr/bin/env bash
# shmkv_collections_bench.sh: what one operation on a collection costs as
# the collection grows, shmkv beside redis-server (Debian's, persistence
# off) in the same run, with the same client (redis-benchmark, custom
# commands, 10 connections, pipeline 16).
#
# For each size (10, 10^3, 10^6 elements) both servers get the same
# collections (a list, a hash, a set, a sorted set), then each
# operation runs N times on them and the server's own CPU time (user + sys,
# from /proc, every process of it) is divided by N: microseconds per
# operation. Fields and members are redis-benchmark's __rand_int__ over
# the collection's size, so HSET/SADD/ZADD overwrite what is there and the
# size holds (LPUSH grows the list by N, RPOP takes it back); a stream of
# the same size has every entry pending in a consumer group, and XCLAIM
# moves random ones between consumers.
#
#   bench/shmkv_collections_bench.sh [--requests N] [--sizes "10 1000"]
#                                    [--ops "HSET HGET"] [--out DIR]
#
# --ops runs only the named operations (all by default). --value-pool
# picks shmkv's value pool (extents, the default, or nodes). --hugepages puts
# shmkv's map on 2 MiB pages (docs/server.md, "Hugepages"; reserve about
# 1,200 of them first: echo 1200 > /proc/sys/vm/nr_hugepages); Redis runs
# as Debian ships it either way.
#
# Needs redis-server and redis-tools, and a release build
# (build/release/server/shmkv). Writes DIR/collections.csv (size, op,
# server, us per op) and prints, per operation, each server's cost at each
# size and its ratio to the cost at the smallest size.
set -euo pipefail
cd "$(dirname "$0")/.."

requests=200000
kv_hugepages=0
sizes="10 1000 1000000"
only=""
out=build/shmkv_collections_bench
pool=extents
while [ $# -gt 0 ]; do
  case "$1" in
    --requests) requests=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --ops) only=" $2 "; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --hugepages) kv_hugepages=1; shift ;;
    --value-pool) pool=$2; shift 2 ;;
    *) echo "usage: $0 [--requests N] [--sizes LIST] [--ops LIST] [--out DIR] [--hugepages] [--value-pool extents|nodes]" >&2; exit 2 ;;
  esac
done
. bench/server_pair.sh  # start_server_pair, ticks
start_server_pair shmkv_collections_bench --capacity 4000000 --memory 2G \
  --journal-size 256M --value-pool "$pool"

hz=$(getconf CLK_TCK)

# RESP for the fill: one command per element, the names redis-benchmark's
# __rand_int__ makes (12 digits).
fill() {  # fill PORT SIZE WITH_ZSET
  python3 - "$2" "$3" <<'EOF' | redis-cli -p "$1" --pipe >/dev/null
import sys
n, zset = int(sys.argv[1]), sys.argv[2] == "1"
out = sys.stdout.buffer
def cmd(*args):
    out.write(b"*%d\r\n" % len(args))
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out.write(b"$%d\r\n%s\r\n" % (len(a), a))
cmd("DEL", "l", "h", "s", "z", "x")
for i in range(n):
    name = "%012d" % i
    cmd("RPUSH", "l", "v" + name)
    cmd("HSET", "h", "f:" + name, "v")
    cmd("SADD", "s", "m:" + name)
    if zset:
        cmd("ZADD", "z", str(i), "m:" + name)
    # A stream whose entries are i-1, every one pending in group g.
    cmd("XADD", "x", "%d-1" % i, "f", "v")
cmd("XGROUP", "CREATE", "x", "g", "0")
cmd("XREADGROUP", "GROUP", "g", "c", "COUNT", str(n), "STREAMS", "x", ">")
EOF
}

mkdir -p "$out"
csv=$out/collections.csv
echo "size,op,server,us_per_op" > "$csv"
for size in $sizes; do
  with_zset=1
  ops=("LPUSH l x" "RPOP l" "HSET h f:__rand_int__ v" "HGET h f:__rand_int__"
       "SADD s m:__rand_int__" "SISMEMBER s m:__rand_int__"
       "LINDEX l $((size / 2))")
  if [ $with_zset = 1 ]; then
    ops+=("ZADD z __rand_int__ m:__rand_int__" "ZSCORE z m:__rand_int__"
          "ZRANK z m:__rand_int__" "ZRANGE z 0 9")
  fi
  # A stream's consumer group, all its entries pending: a claim of one
  # (the entry looked up, its pending entry rewritten), and the first ten
  # pending. (__rand_int__ is 12 digits: both servers read the leading
  # zeros of an ID as strtoull does.)
  ops+=("XCLAIM x g c2 0 __rand_int__-1 JUSTID" "XPENDING x g - + 10")
  for server in redis shmkv; do
    case $server in
      redis) port=$redis_port pids=$redis_pid ;;
      shmkv) port=$kv_port pids="$kv_pid $(pgrep -P $kv_pid | tr '\n' ' ')" ;;
    esac
    fill $port "$size" $with_zset
    for op in "${ops[@]}"; do
      [ -z "$only" ] || [[ "$only" == *" ${op%% *} "* ]] || continue
      n=$requests
      # LINDEX of the middle is linear in both: fewer of them at 10^6.
      [[ "$op" == LINDEX* ]] && [ "$size" -gt 1000 ] && n=$((requests / 100))
      before=$(ticks $pids)
      # shellcheck disable=SC2086
      redis-benchmark -p $port -n $n -c 10 -P 16 -r "$size" $op >/dev/null 2>&1
      after=$(ticks $pids)
      echo "$size,${op%% *},$server,$(python3 -c "print(round(($after - $before) * 1e6 / $hz / $n, 3))")" >> "$csv"
    done
  done
done

python3 - "$csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cost = {(r["op"], r["server"], int(r["size"])): float(r["us_per_op"]) for r in rows}
sizes = sorted({int(r["size"]) for r in rows})
ops = []
for r in rows:
    if r["op"] not in ops:
        ops.append(r["op"])
print("us of server CPU per operation (ratio to the smallest size)")
print("%-10s %-6s " % ("op", "server") + " ".join("%18s" % s for s in sizes))
for op in ops:
    for server in ("redis", "shmkv"):
        base = cost.get((op, server, sizes[0]))
        cells = []
        for s in sizes:
            v = cost.get((op, server, s))
            if v is None:
                cells.append("%18s" % "-")
            else:
                ratio = v / base if base else float("nan")
                cells.append("%10.3f (%4.2fx)" % (v, ratio))
        print("%-10s %-6s " % (op, server) + " ".join(cells))
EOF
