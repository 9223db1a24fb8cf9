#!/usr/bin/env bash
# shmkv_pubsub_script_bench.sh: server CPU per request for PUBLISH with
# one subscriber on another worker, and for EVALSHA of a three-command
# script, shmkv beside redis-server (Debian's, persistence off) in the
# same run, same clients.
#
#   bench/shmkv_pubsub_script_bench.sh [--requests N] [--out DIR]
#
# PUBLISH: a subscriber connects (to shmkv: until it sits on worker B,
# told apart by INFO's process_id) and reads every message; one
# publisher connection (on worker A) sends N PUBLISHes of 100 bytes,
# 16 in flight, and waits until the subscriber has them all. EVALSHA:
# redis-benchmark, 10 connections, pipeline 16, a script that INCRs a
# counter, SETs a key and GETs it. The server's own CPU time (user +
# sys, from /proc, every process of it) is divided by N.
#
# Needs redis-server and redis-tools, and a release build
# (build/release/server/shmkv). Writes DIR/pubsub_script.csv.
set -euo pipefail
cd "$(dirname "$0")/.."

requests=200000
out=build/shmkv_pubsub_script_bench
while [ $# -gt 0 ]; do
  case "$1" in
    --requests) requests=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--requests N] [--out DIR]" >&2; exit 2 ;;
  esac
done
. bench/server_pair.sh  # start_server_pair, ticks
start_server_pair shmkv_pubsub_script_bench --workers 2
hz=$(getconf CLK_TCK)
mkdir -p "$out"
csv=$out/pubsub_script.csv
echo "op,server,us_per_op" > "$csv"

# One publisher, one subscriber on another worker: prints when the
# subscriber has every message.
publish() {  # publish PORT N
  python3 - "$1" "$2" <<'EOF'
import re, socket, sys, threading
port, n = int(sys.argv[1]), int(sys.argv[2])
def conn():
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s
def worker(s):  # the process that serves connection s (INFO's process_id)
    s.sendall(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")
    d = b""
    while True:
        d += s.recv(65536)
        m = re.match(rb"\$(\d+)\r\n", d)
        if m and len(d) >= m.end() + int(m.group(1)) + 2:
            break
    m = re.search(rb"process_id:(\d+)", d)
    return m.group(1)
pub = conn()
a = worker(pub)
for _ in range(200):
    sub = conn()
    if worker(sub) != a:
        break
sub.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\nch\r\n")
sub.recv(1024)
msg = b"x" * 100
frame = b"*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n$100\r\n" + msg + b"\r\n"
want = len(b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$100\r\n" + msg + b"\r\n") * n
def read_all():
    got = 0
    while got < want:
        got += len(sub.recv(1 << 20))
t = threading.Thread(target=read_all)
t.start()
done = 0
batch = frame * 16
while done < n:
    k = min(16, n - done)
    pub.sendall(batch if k == 16 else frame * k)
    need = k * 4  # ":1\r\n"
    got = b""
    while len(got) < need:
        got += pub.recv(65536)
    done += k
t.join()
EOF
}

for server in redis shmkv; do
  case $server in
    redis) port=$redis_port pids=$redis_pid ;;
    shmkv) port=$kv_port pids="$kv_pid $(pgrep -P $kv_pid | tr '\n' ' ')" ;;
  esac
  before=$(ticks $pids)
  publish $port "$requests"
  after=$(ticks $pids)
  echo "PUBLISH,$server,$(python3 -c "print(round(($after - $before) * 1e6 / $hz / $requests, 3))")" >> "$csv"
  sha=$(redis-cli -p $port SCRIPT LOAD "redis.call('incr', KEYS[1]) redis.call('set', KEYS[2], ARGV[1]) return redis.call('get', KEYS[2])")
  before=$(ticks $pids)
  redis-benchmark -p $port -n "$requests" -c 10 -P 16 EVALSHA "$sha" 2 ctr key val >/dev/null 2>&1
  after=$(ticks $pids)
  echo "EVALSHA,$server,$(python3 -c "print(round(($after - $before) * 1e6 / $hz / $requests, 3))")" >> "$csv"
done

python3 - "$csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cost = {(r["op"], r["server"]): float(r["us_per_op"]) for r in rows}
print("us of server CPU per request (shmkv / redis)")
for op in ("PUBLISH", "EVALSHA"):
    r, k = cost[(op, "redis")], cost[(op, "shmkv")]
    print("%-8s redis %7.3f  shmkv %7.3f  (%.2fx)" % (op, r, k, k / r))
EOF
