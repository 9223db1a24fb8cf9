#!/usr/bin/env bash
# shmkv_bench.sh: shmkv against redis-server (Debian's, persistence off) on
# this machine, in the same run, with the same client:
#   redis-benchmark -t get,set -n N -c 50        (and with -P 16)
#   wrk on shmkv's HTTP GET (redis has no HTTP side: absolute figures)
# Requests/s on a shared 2-vCPU machine swing by +-30% from run to run, so
# each run also records the servers' own CPU time per request (user + sys
# of redis-server, or of shmkv's master and workers, from /proc): a steadier
# measure of the work each server does per request.
#
#   bench/shmkv_bench.sh [--runs R] [--requests N] [--workers W] [--pin]
#                        [--syscalls] [--floor] [--out DIR]
#
# --pin runs both servers on CPU 0 and the clients on CPU 1 (taskset): each
# server gets one core to itself and never competes with the client, which
# takes most of the scheduler's noise out of a 2-vCPU machine. It is the
# fair setting for a single-threaded redis-server against one shmkv worker
# (--workers 1); shmkv's master shares CPU 0 with its worker.
#
# --syscalls then counts each server's system calls (strace -c, every
# thread and worker) over one more GET and one more SET run without
# pipelining, and prints them per request (DIR/shmkv_syscalls.txt): what
# each server asks of the kernel for a request, the part of its CPU time
# that a faster event loop could save. strace slows both servers; only the
# counts are read from it.
#
# --floor adds two servers that do no command work to the same runs
# (bench/machine/reply_floor.cc: "+OK" per request, one thread): one on
# epoll with a recv and a send per request, one on io_uring with one
# io_uring_enter per loop. Their CPU per request is what this kernel's
# loopback TCP costs a server that only moves requests and replies: the
# floor under both servers' figures. Needs the probes build
# (cmake -S . -B build/probes -DSHMC_BUILD_PROBES=ON, with liburing-dev;
# cmake --build build/probes --target probe_reply_floor).
#
# Needs redis-server, redis-tools and wrk (apt-get install redis-server
# redis-tools wrk) and a release build (build/release/server/shmkv). Writes
# (DIR created if needed; build/shmkv_bench by default)
# DIR/shmkv_bench.csv (one line per run, target, test and pipeline depth)
# and DIR/shmkv_bench.svg (bench/plot_shmkv.py), and prints a summary.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
requests=100000
out=build/shmkv_bench  # bench/run_all.sh passes bench/results/<machine>
workers=0  # shmkv's default: one per core
pin=0
syscalls=0
floor=0
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --pin) pin=1; shift ;;
    --syscalls) syscalls=1; shift ;;
    --floor) floor=1; shift ;;
    *) echo "usage: $0 [--runs R] [--requests N] [--workers W] [--pin] [--syscalls] [--floor] [--out DIR]" >&2; exit 2 ;;
  esac
done
server_cpu=() client_cpu=()
if [ "$pin" = 1 ]; then
  [ "$(nproc)" -ge 2 ] || { echo "$0: --pin needs two CPUs" >&2; exit 1; }
  server_cpu=(taskset -c 0) client_cpu=(taskset -c 1)
fi
tools="redis-server redis-benchmark wrk"
[ "$syscalls" = 1 ] && tools="$tools strace"
for tool in $tools; do
  command -v "$tool" >/dev/null || { echo "$0: $tool not installed" >&2; exit 1; }
done
shmkv=build/release/server/shmkv
[ -x "$shmkv" ] || { echo "$0: build first: cmake --preset release && cmake --build --preset release" >&2; exit 1; }
reply_floor=build/probes/bench/reply_floor
if [ "$floor" = 1 ] && [ ! -x "$reply_floor" ]; then
  echo "$0: --floor needs $reply_floor: cmake -S . -B build/probes -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHMC_BUILD_PROBES=ON && cmake --build build/probes --target probe_reply_floor" >&2
  exit 1
fi

shmc_tool=build/release/tools/shmc
. bench/ports.sh  # port_in_use, free_port, ticks
# take_port VAR: a free port no earlier take_port handed out, into VAR.
taken=" "
take_port() {
  local p
  p=$(free_port)
  while [[ "$taken" == *" $p "* ]]; do p=$(free_port); done
  taken="$taken$p "
  printf -v "$1" '%s' "$p"
}
take_port redis_port
take_port kv_port
take_port kv_http
take_port epoll_port
take_port uring_port
seg=/shmkv_bench_$$
# The server's segments, removed with shmkv --remove, which removes only
# what proves to be shmc's.
remove_segments() {
  "$shmkv" --name "posix:$seg" --remove >/dev/null 2>&1 || true
}
cleanup() {
  [ -n "${redis_pid:-}" ] && kill "$redis_pid" 2>/dev/null || true
  [ -n "${kv_pid:-}" ] && kill "$kv_pid" 2>/dev/null || true
  [ -n "${epoll_pid:-}" ] && kill "$epoll_pid" 2>/dev/null || true
  [ -n "${uring_pid:-}" ] && kill "$uring_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  remove_segments
}
trap cleanup EXIT
remove_segments

${server_cpu[@]+"${server_cpu[@]}"} redis-server --port $redis_port --save '' --appendonly no --daemonize no \
  --logfile /dev/null &
redis_pid=$!
worker_opt=()
[ "$workers" -gt 0 ] && worker_opt=(--workers "$workers")
${server_cpu[@]+"${server_cpu[@]}"} "$shmkv" --port $kv_port --http-port $kv_http --name $seg "${worker_opt[@]}" 2>/dev/null &
kv_pid=$!
targets="redis shmkv"
ports="$redis_port $kv_port"
if [ "$floor" = 1 ]; then
  ${server_cpu[@]+"${server_cpu[@]}"} "$reply_floor" --port $epoll_port --mode epoll &
  epoll_pid=$!
  ${server_cpu[@]+"${server_cpu[@]}"} "$reply_floor" --port $uring_port --mode uring &
  uring_pid=$!
  targets="$targets floor-epoll floor-uring"
  ports="$ports $epoll_port $uring_port"
fi
for p in $ports; do
  for _ in $(seq 100); do redis-cli -p $p ping >/dev/null 2>&1 && break; sleep 0.1; done
done

hz=$(getconf CLK_TCK)

mkdir -p "$out"
csv=$out/shmkv_bench.csv
echo "run,target,test,pipeline,rps,avg_ms,p50_ms,p99_ms,server_cpu_us_per_req" > "$csv"
for run in $(seq "$runs"); do
  for pipe in 1 16; do
    # Alternate the order so neither server always runs on a warmer machine.
    order=$targets
    [ $((run % 2)) -eq 0 ] && order=$(echo "$targets" | tr ' ' '\n' | tac | tr '\n' ' ')
    for target in $order; do
      case $target in
        redis) port=$redis_port pids=$redis_pid ;;
        shmkv) port=$kv_port pids="$kv_pid $(pgrep -P $kv_pid | tr '\n' ' ')" ;;
        floor-epoll) port=$epoll_port pids=$epoll_pid ;;
        floor-uring) port=$uring_port pids=$uring_pid ;;
      esac
      for t in set get; do
        before=$(ticks $pids)
        line=$(${client_cpu[@]+"${client_cpu[@]}"} redis-benchmark -p $port -t $t -n "$requests" -c 50 -P $pipe --csv 2>/dev/null |
               tail -n 1 | tr -d '"')
        after=$(ticks $pids)
        echo "$line" | awk -F, -v r="$run" -v tg="$target" -v p="$pipe" \
          -v cpu="$(( (after - before) * 1000000 / hz ))" -v n="$requests" \
          '{printf "%s,%s,%s,%s,%s,%s,%s,%s,%.2f\n", r, tg, $1, p, $2, $3, $5, $7, cpu / n}' >> "$csv"
      done
    done
  done
done

redis-cli -p $kv_port set benchkey "$(head -c 100 /dev/zero | tr '\0' v)" >/dev/null
wrk_out=$(${client_cpu[@]+"${client_cpu[@]}"} wrk -t2 -c50 -d10s --latency http://127.0.0.1:$kv_http/kv/benchkey)

echo "# redis-benchmark -n $requests -c 50, $runs runs: medians"
python3 - "$csv" <<'PY'
import csv, statistics, sys
from collections import defaultdict
runs = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    runs[(r["test"], r["pipeline"], r["target"])].append(r)
def med(rows, k):
    return statistics.median(float(r[k]) for r in rows)
def paired(s, r, k):
    # Median over runs of shmkv / redis within one run: the two ran minutes
    # apart at most, so this ratio drifts less than the ratio of medians.
    rv = {x["run"]: float(x[k]) for x in r}
    return statistics.median(float(x[k]) / rv[x["run"]] for x in s
                             if rv.get(x["run"]))
print(f"{'test':10} {'shmkv rps':>10} {'redis rps':>10} {'ratio':>6} "
      f"{'paired':>6} {'p99 ms shmkv':>12} {'redis':>6} {'p99 paired':>10} "
      f"{'cpu us/req shmkv':>16} {'redis':>6}")
for (test, pipe) in sorted({(k[0], k[1]) for k in runs}):
    s, r = runs[(test, pipe, "shmkv")], runs[(test, pipe, "redis")]
    print(f"{test + ' -P ' + pipe:10} {med(s, 'rps'):10.0f} {med(r, 'rps'):10.0f} "
          f"{med(s, 'rps') / med(r, 'rps'):6.2f} {paired(s, r, 'rps'):6.2f} "
          f"{med(s, 'p99_ms'):12.3f} {med(r, 'p99_ms'):6.3f} "
          f"{paired(s, r, 'p99_ms'):10.2f} "
          f"{med(s, 'server_cpu_us_per_req'):16.2f} "
          f"{med(r, 'server_cpu_us_per_req'):6.2f}")
floors = sorted({k[2] for k in runs if k[2].startswith("floor-")})
if floors:
    print("# server CPU per request against redis-server's, paired by run "
          "(median, min-max); the floor servers do no command work")
    print(f"{'test':10} {'target':12} {'cpu us/req':>10} {'x redis':>8} "
          f"{'range':>11}")
    for (test, pipe) in sorted({(k[0], k[1]) for k in runs}):
        r = runs[(test, pipe, "redis")]
        rv = {x["run"]: float(x["server_cpu_us_per_req"]) for x in r}
        for tg in ["shmkv"] + floors:
            s = runs[(test, pipe, tg)]
            q = [float(x["server_cpu_us_per_req"]) / rv[x["run"]] for x in s
                 if rv.get(x["run"])]
            print(f"{test + ' -P ' + pipe:10} {tg:12} "
                  f"{med(s, 'server_cpu_us_per_req'):10.2f} "
                  f"{statistics.median(q):8.2f} "
                  f"{min(q):5.2f}-{max(q):5.2f}")
PY
echo "# wrk -t2 -c50 -d10s GET /kv/benchkey (100-byte value)"
echo "$wrk_out" | grep -E "Requests/sec|Latency|50%|99%"
echo "$wrk_out" > "$out/shmkv_bench_wrk.txt"

# System calls per request, counted by strace attached to every thread of
# the server's processes during one GET and one SET run.
count_syscalls() {  # target port pids...
  local target=$1 port=$2 t args=() p
  shift 2
  for p in "$@"; do args+=(-p "$p"); done
  for t in get set; do
    strace -c -f "${args[@]}" -o "$out/strace_$target.$t" 2>/dev/null &
    local spid=$!
    sleep 1  # time to attach; a late attach shows as under one read a request
    ${client_cpu[@]+"${client_cpu[@]}"} redis-benchmark -p "$port" -t $t -n "$requests" -c 50 -q >/dev/null 2>&1
    kill -INT $spid
    wait $spid 2>/dev/null || true
    awk -v tg="$target" -v t="$t" -v n="$requests" \
      '$NF ~ /^[a-z_0-9]+$/ && $NF != "syscall" && $NF != "total" {
         if ($4 + 0 >= n / 100)
           printf "%-6s %-4s %-14s %8.3f per request\n", tg, t, $NF, $4 / n }' \
      "$out/strace_$target.$t"
    rm -f "$out/strace_$target.$t"
  done
}
if [ "$syscalls" = 1 ]; then
  {
    echo "# system calls per request (strace -c -f), redis-benchmark -n $requests -c 50, no pipelining"
    count_syscalls redis "$redis_port" "$redis_pid"
    count_syscalls shmkv "$kv_port" "$kv_pid" $(pgrep -P "$kv_pid" | tr '\n' ' ')
  } | tee "$out/shmkv_syscalls.txt"
fi
python3 bench/plot_shmkv.py "$csv" "$out/shmkv_bench.svg"
