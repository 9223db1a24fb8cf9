#!/usr/bin/env bash
# shmkv_memory_bench.sh: bytes per element of each data type, shmkv beside
# redis-server (Debian's, persistence off) holding the same data in the
# same run.
#
# Each shape is written into both servers (emptied first), and the growth
# of what each server holds is divided by the elements written:
#   redis: INFO memory used_memory;
#   shmkv: INFO memory used_memory (the value nodes in use, 80 bytes each
#          with their bookkeeping) plus the index slots the keys and parts
#          fill (the index segment's size over --capacity, per slot).
# Shapes: a hash, a list, a set of N elements with small (14-byte) and
# large (100-byte) members, a sorted set of min(N, 10^4) small members
# (one blob in this build: an insert is linear in its size), and N/10
# small hashes of 10 fields (a session store's shape).
#
#   bench/shmkv_memory_bench.sh [--elements N] [--out DIR]
#
# Needs redis-server, redis-tools and python3, and a release build.
# Writes DIR/memory.csv and prints bytes per element and the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."

elements=1000000
out=build/shmkv_memory_bench
while [ $# -gt 0 ]; do
  case "$1" in
    --elements) elements=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--elements N] [--out DIR]" >&2; exit 2 ;;
  esac
done
shmkv=build/release/server/shmkv
[ -x "$shmkv" ] || { echo "$0: build first: cmake --preset release && cmake --build --preset release" >&2; exit 1; }
. bench/ports.sh  # free_port
redis_port=$(free_port)
kv_port=$(free_port)
while [ "$kv_port" = "$redis_port" ]; do kv_port=$(free_port); done
kv_http=$(free_port)
seg=/shmkv_memory_bench_$$
capacity=$((elements * 3))
remove_segments() {
  for s in "$seg" "$seg.ctl" "$seg.ctl.journal" "$seg.ctl.stats"; do
    build/release/tools/shmc rm "posix:$s" >/dev/null 2>&1 || true
  done
}
cleanup() {
  kill $redis_pid $kv_pid 2>/dev/null || true
  wait 2>/dev/null || true
  remove_segments
}
trap cleanup EXIT
remove_segments
redis-server --port $redis_port --save '' --appendonly no --daemonize no \
  --logfile /dev/null &
redis_pid=$!
"$shmkv" --port $kv_port --http-port $kv_http --name $seg --workers 1 \
  --capacity $capacity --memory 1536M --max-value 256M --journal-size 512M \
  2>/dev/null &
kv_pid=$!
for p in $redis_port $kv_port; do
  for _ in $(seq 600); do redis-cli -p $p ping >/dev/null 2>&1 && break; sleep 0.1; done
done
slot_bytes=$(python3 -c "import os; print(os.path.getsize('/dev/shm$seg' + '0') / $capacity)")

mkdir -p "$out"
python3 - "$redis_port" "$kv_port" "$elements" "$slot_bytes" "$out/memory.csv" <<'EOF'
import subprocess, sys
redis_port, kv_port, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
slot, csv_path = float(sys.argv[4]), sys.argv[5]

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
        # One ZADD: a sorted set is one blob in this build.
        m = min(n, 10000)
        args = ["ZADD", "z"]
        for i in range(m):
            args += [str(i), "m:%012d" % i]
        return iter([resp(*args)]), m
    if shape == "hashes of 10":
        keys = n // 10
        return (resp("HSET", "session:%d" % k,
                     *sum([["f%d" % f, "value%03d" % f] for f in range(10)], []))
                for k in range(keys)), keys * 10
    raise ValueError(shape)

shapes = ["hash small", "hash large", "list small", "list large",
          "set small", "set large", "zset small", "hashes of 10"]
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
