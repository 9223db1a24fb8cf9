#!/usr/bin/env bash
# shmkv_memory_bench.sh: bytes per element of each data type, shmkv beside
# redis-server (Debian's, persistence off) holding the same data in the
# same run.
#
# Each shape is written into both servers (emptied first), and the growth
# of what each server holds is divided by the elements written:
#   redis: INFO memory used_memory;
#   shmkv: INFO memory used_memory (the value nodes in use, 80 bytes each
#          with their bookkeeping; with --value-pool extents, the 8-byte
#          granules its values' extents hold) plus the index slots the keys and parts
#          fill (the index segment's size over --capacity, per slot).
# Shapes: a hash, a list, a set and a sorted set of N elements with small
# (14-byte) and large (100-byte) members, N/10 small hashes of 10
# fields (a session store's shape), and N string keys of 10, 100 and
# 1,000-byte values.
#
#   bench/shmkv_memory_bench.sh [--elements N] [--shapes "zset small,..."]
extents]|extents]
#
# Needs redis-server, redis-tools and python3, and a release build.
# Writes DIR/memory.csv and prints bytes per element and the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."

elements=1000000
only=""
pool=extents
out=build/shmkv_memory_bench
while [ $# -gt 0 ]; do
  case "$1" in
    --elements) elements=$2; shift 2 ;;
    --shapes) only=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --value-pool) pool=$2; shift 2 ;;
    *) echo "usage: $0 [--elements N] [--shapes LIST] [--out DIR] [--value-pool P]" >&2; exit 2 ;;
  esac
done
capacity=$((elements * 3))
. bench/server_pair.sh  # start_server_pair
start_server_pair shmkv_memory_bench --capacity $capacity --memory 1536M \
  --max-value 256M --journal-size 512M --value-pool $pool
slot_bytes=$(python3 -c "import os; print(os.path.getsize('/dev/shm$seg' + '0') / $capacity)")

mkdir -p "$out"
python3 - "$redis_port" "$kv_port" "$elements" "$slot_bytes" "$out/memory.csv" "$only" <<'EOF'
import subprocess, sys
redis_port, kv_port, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
slot, csv_path = float(sys.argv[4]), sys.argv[5]
only = [x.strip() for x in sys.argv[6].split(",") if x.strip()]

def info(port):
    text = subprocess.run(["redis-cli", "-p", str(port), "INFO", "memory"],
                          capture_output=True, text=True).stdout
    fields = dict(l.split(":", 1) for l in text.splitlines() if ":" in l)
    return fields

def held(port, kv):
    f = info(port)
    used = int(f["used_memory"])
    if not kv:
        return used
    keys = int(subprocess.run(["redis-cli", "-p", str(port), "DBSIZE"],
                              capture_output=True, text=True).stdout)
    return used + (keys + int(f["collection_parts"])) * slot

def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)

def shape_commands(shape):
    big = "x" * 86
    if shape == "hash small":
        return (resp("HSET", "h", "f:%012d" % i, "v") for i in range(n)), n
    if shape == "hash large":
        return (resp("HSET", "h", "f:%012d%s" % (i, big), "v")
                for i in range(n)), n
    if shape == "list small":
        return (resp("RPUSH", "l", "v:%012d" % i) for i in range(n)), n
    if shape == "list large":
        return (resp("RPUSH", "l", "v:%012d%s" % (i, big)) for i in range(n)), n
    if shape == "set small":
        return (resp("SADD", "s", "m:%012d" % i) for i in range(n)), n
    if shape == "set large":
        return (resp("SADD", "s", "m:%012d%s" % (i, big)) for i in range(n)), n
    if shape == "zset small":
        return (resp("ZADD", "z", str(i), "m:%012d" % i) for i in range(n)), n
    if shape == "zset large":
        return (resp("ZADD", "z", str(i), "m:%012d%s" % (i, big))
                for i in range(n)), n
    if shape.startswith("strings "):
        size = int(shape.split()[1])
        return (resp("SET", "k:%012d" % i, ("%012d" % i).ljust(size, "v")[:size])
                for i in range(n)), n
    if shape == "hashes of 10":
        keys = n // 10
        return (resp("HSET", "session:%d" % k,
                     *sum([["f%d" % f, "value%03d" % f] for f in range(10)], []))
                for k in range(keys)), keys * 10
    raise ValueError(shape)

shapes = ["hash small", "hash large", "list small", "list large",
          "set small", "set large", "zset small", "zset large",
          "hashes of 10", "strings 10", "strings 100", "strings 1000"]
if only:
    shapes = [x for x in shapes if x in only]
rows = []
for shape in shapes:
    per = {}
    for name, port in (("redis", redis_port), ("shmkv", kv_port)):
        subprocess.run(["redis-cli", "-p", str(port), "FLUSHALL"],
                       capture_output=True)
        before = held(port, name == "shmkv")
        cmds, count = shape_commands(shape)
        p = subprocess.Popen(["redis-cli", "-p", str(port), "--pipe"],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        for c in cmds:
            p.stdin.write(c)
        p.stdin.close()
        p.wait()
        after = held(port, name == "shmkv")
        per[name] = (after - before) / count
    rows.append((shape, per["redis"], per["shmkv"]))
    print("%-13s redis %7.1f B/elem   shmkv %7.1f B/elem   %.2fx" %
          (shape, per["redis"], per["shmkv"], per["shmkv"] / per["redis"]),
          flush=True)
with open(csv_path, "w") as f:
    f.write("shape,redis_bytes_per_element,shmkv_bytes_per_element\n")
    for r in rows:
        f.write("%s,%.1f,%.1f\n" % r)
EOF
