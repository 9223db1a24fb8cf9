#!/usr/bin/env bash
# shmkv_bench.sh: shmkv against redis-server (Debian's, persistence off) on
# this machine, in the same run, with the same client:
#   redis-benchmark -c 50 -r 100000 for each command and pipeline depth
#   wrk on shmkv's HTTP GET (redis has no HTTP side: absolute figures)
# Requests/s on a shared 2-vCPU machine swing by +-30% from run to run, so
# each run also records the servers' own CPU time per request (user + sys
# of redis-server, or of shmkv's master and workers, from /proc): a steadier
# measure of the work each server does per request, reported against
# redis-server's in the same run (paired by run: median, min-max).
#
#   bench/shmkv_bench.sh [--runs R] [--requests N] [--workers "1 2"]
#                        [--tests "get set ..."] [--depths "1 16 64"]
#                        [--pin] [--stages] [--syscalls] [--floor]
#                        [--out DIR]
#
# --tests: any of get set incr mget hget hset lpush rpop sadd zadd (the
# default: all, in that order). mget is MGET of 10 random keys, hget an
# HGET of a random field of the hash hset makes (both filled before the
# runs); lpush and rpop push onto and pop from one list (rpop runs after
# lpush with as many requests, so it pops a list that is never empty). Keys, fields and members are random among 100,000
# (-r), values redis-benchmark's default 3 bytes.
# --depths: pipeline depths (-P). Depth 1 runs N requests (--requests,
# 100,000 by default), deeper ones 10 N (CPU ticks are 10 ms: at N a
# pipelined run would be a few ticks).
# --workers: one shmkv server per count given, each a target of its own
# (shmkv-1w, shmkv-2w), all running for the whole bench.
#
# --pin runs all servers on CPU 0 and the clients on CPU 1 (taskset): a
# server never competes with the client, which takes most of the
# scheduler's noise out of a 2-vCPU machine. It is the fair setting for a
# single-threaded redis-server against one shmkv worker; a 2-worker shmkv
# then shares CPU 0 between its workers.
#
# --stages then records, for each test at depth 16, where shmkv's worker
# (the 1-worker server) and redis-server spend their CPU
# (perf record -e cpu-clock -g on the process, in a run of its own that is
# not counted above), by stage: the kernel's part split by the system call
# it serves (read, write, wait) and shmkv's own by function (parse,
# dispatch, store, reply, statistics and clock, copies and allocation);
# bench/perf_stages.py has the rules. DIR/shmkv_stages.txt.
#
# --syscalls then counts each server's system calls (strace -c, every
# thread and worker) over one more GET and one more SET run without
# pipelining, and prints them per request (DIR/shmkv_syscalls.txt): what
# each server asks of the kernel for a request, the part of its CPU time
# that a faster event loop could save. strace slows both servers; only the
# counts are read from it.
#
# --floor adds two servers that do no command work to the GET and SET runs
# (bench/machine/reply_floor.cc: "+OK" per request, one thread): one on
# epoll with a recv and a send per request, one on io_uring with one
# io_uring_enter per loop. Their CPU per request is what this kernel's
# loopback TCP costs a server that only moves requests and replies: the
# floor under both servers' figures. Needs the probes build
# (cmake -S . -B build/probes -DSHMC_BUILD_PROBES=ON, with liburing-dev;
# cmake --build build/probes --target probe_reply_floor).
#
# --hugepages puts each shmkv server's map on 2 MiB pages (docs/server.md,
# "Hugepages"; reserve them first, about 150 per server at the default
# --memory and --capacity: echo 400 > /proc/sys/vm/nr_hugepages); redis-server runs as
# Debian ships it either way.
#
# Needs redis-server, redis-tools and wrk (apt-get install redis-server
# redis-tools wrk), perf for --stages, and a release build
# (build/release/server/shmkv). Writes (DIR created if needed;
# build/shmkv_bench by default) DIR/shmkv_bench.csv (one line per run,
# target, test and pipeline depth) and DIR/shmkv_bench.svg
# (bench/plot_shmkv.py), and prints a summary.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3
requests=100000
out=build/shmkv_bench  # bench/run_all.sh passes bench/results/<machine>
workers="1 2"
tests="get set incr mget hget hset lpush rpop sadd zadd"
depths="1 16 64"
pin=0
stages=0
syscalls=0
floor=0
hugepages=0
usage="usage: $0 [--runs R] [--requests N] [--workers \"1 2\"] [--tests \"get set ...\"] [--depths \"1 16 64\"] [--pin] [--stages] [--syscalls] [--floor] [--hugepages] [--out DIR]"
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --tests) tests=$2; shift 2 ;;
    --depths) depths=$2; shift 2 ;;
    --pin) pin=1; shift ;;
    --stages) stages=1; shift ;;
    --syscalls) syscalls=1; shift ;;
    --floor) floor=1; shift ;;
    --hugepages) hugepages=1; shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
for t in $tests; do
  case $t in
    get|set|incr|mget|hget|hset|lpush|rpop|sadd|zadd) ;;
    *) echo "$0: unknown test $t" >&2; exit 2 ;;
  esac
done
for w in $workers; do
  [[ "$w" =~ ^[1-9][0-9]*$ ]] || { echo "$0: --workers takes counts: $w" >&2; exit 2; }
done
server_cpu=() client_cpu=()
if [ "$pin" = 1 ]; then
  [ "$(nproc)" -ge 2 ] || { echo "$0: --pin needs two CPUs" >&2; exit 1; }
  server_cpu=(taskset -c 0) client_cpu=(taskset -c 1)
fi
tools="redis-server redis-benchmark wrk"
[ "$syscalls" = 1 ] && tools="$tools strace"
[ "$stages" = 1 ] && tools="$tools perf"
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
take_port epoll_port
take_port uring_port
# One shmkv server per worker count: its port, HTTP port, pid, segments.
declare -A kv_port kv_http kv_pid
for w in $workers; do
  take_port "kv_port[$w]"
  take_port "kv_http[$w]"
done
# A server's segments: POSIX, or with --hugepages System V (the map on
# hugepages needs a System V name; the map appends a digit to it).
seg_of() {
  if [ "$hugepages" = 1 ]; then
    echo "sysv:$((54000 + ($$ % 1000) * 10 + $1))"
  else
    echo "posix:/shmkv_bench_$$_$1"
  fi
}
kv_pages=()
[ "$hugepages" = 1 ] && kv_pages=(--hugepages)
# A server's segments, removed with shmkv --remove, which removes only
# what proves to be shmc's.
remove_segments() {
  local w
  for w in $workers; do
    "$shmkv" --name "$(seg_of "$w")" --remove >/dev/null 2>&1 || true
  done
}
cleanup() {
  local pid
  for pid in ${redis_pid:-} ${kv_pid[@]+"${kv_pid[@]}"} ${epoll_pid:-} \
             ${uring_pid:-} ${perf_pid:-}; do
    kill "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  remove_segments
}
trap cleanup EXIT
remove_segments

${server_cpu[@]+"${server_cpu[@]}"} redis-server --port $redis_port --save '' --appendonly no --daemonize no \
  --logfile /dev/null &
redis_pid=$!
targets="redis"
ports="$redis_port"
for w in $workers; do
  ${server_cpu[@]+"${server_cpu[@]}"} "$shmkv" --port "${kv_port[$w]}" \
    --http-port "${kv_http[$w]}" --name "$(seg_of "$w")" --workers "$w" \
    ${kv_pages[@]+"${kv_pages[@]}"} 2>/dev/null &
  kv_pid[$w]=$!
  targets="$targets shmkv-${w}w"
  ports="$ports ${kv_port[$w]}"
done
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
  redis-cli -p $p ping >/dev/null 2>&1 || {
    echo "$0: the server on port $p did not start (run it with the same options to see why)" >&2
    exit 1
  }
done

hz=$(getconf CLK_TCK)

# target_port TARGET, target_pids TARGET: where a target listens and the
# processes whose CPU time it spends (shmkv: the master and its workers).
target_port() {
  case $1 in
    redis) echo "$redis_port" ;;
    shmkv-*w) local w=${1#shmkv-}; echo "${kv_port[${w%w}]}" ;;
    floor-epoll) echo "$epoll_port" ;;
    floor-uring) echo "$uring_port" ;;
  esac
}
target_pids() {
  case $1 in
    redis) echo "$redis_pid" ;;
    shmkv-*w) local w=${1#shmkv-} pid
      pid=${kv_pid[${w%w}]}
      echo "$pid $(pgrep -P "$pid" | tr '\n' ' ')" ;;
    floor-epoll) echo "$epoll_pid" ;;
    floor-uring) echo "$uring_pid" ;;
  esac
}
# The redis-benchmark arguments of a test.
test_args() {
  local keys=() i
  case $1 in
    mget) for i in $(seq 10); do keys+=("key:__rand_int__"); done
          echo "MGET ${keys[*]}" ;;
    hget) echo "HGET myhash element:__rand_int__" ;;
    *) echo "-t $1" ;;
  esac
}
# bench_one PORT TEST DEPTH N: one redis-benchmark run; its --csv line.
bench_one() {
  local args
  read -r -a args <<<"$(test_args "$2")"
  ${client_cpu[@]+"${client_cpu[@]}"} redis-benchmark -p "$1" -n "$4" -c 50 \
    -r 100000 -P "$3" --csv "${args[@]}" 2>/dev/null | tail -n 1 | tr -d '"'
}
# The do-nothing servers answer "+OK" to anything: their figures mean
# something for the requests they stand for, GET and SET only.
floor_test() { [ "$1" = get ] || [ "$1" = set ]; }

# Every server starts with the keys and fields the reads ask for (the
# 100,000 random keys of SET, the hash of HSET), so GET, MGET and HGET
# find what they look up whatever order the tests run in. Not counted.
for target in $targets; do
  case $target in floor-*) continue ;; esac
  ${client_cpu[@]+"${client_cpu[@]}"} redis-benchmark -p "$(target_port "$target")" \
    -n 400000 -c 50 -r 100000 -P 16 -t set,hset -q >/dev/null 2>&1
done

mkdir -p "$out"
csv=$out/shmkv_bench.csv
echo "run,target,test,pipeline,rps,avg_ms,p50_ms,p99_ms,server_cpu_us_per_req" > "$csv"
for run in $(seq "$runs"); do
  for pipe in $depths; do
    n=$requests
    [ "$pipe" -gt 1 ] && n=$((requests * 10))
    # Alternate the order so neither server always runs on a warmer machine.
    order=$targets
    [ $((run % 2)) -eq 0 ] && order=$(echo "$targets" | tr ' ' '\n' | tac | tr '\n' ' ')
    for target in $order; do
      port=$(target_port "$target")
      pids=$(target_pids "$target")
      for t in $tests; do
        case $target in floor-*) floor_test "$t" || continue ;; esac
        before=$(ticks $pids)
        line=$(bench_one "$port" "$t" "$pipe" "$n")
        after=$(ticks $pids)
        echo "$line" | awk -F, -v r="$run" -v tg="$target" -v p="$pipe" \
          -v t="$t" -v cpu="$(( (after - before) * 1000000 / hz ))" -v n="$n" \
          '{printf "%s,%s,%s,%s,%s,%s,%s,%s,%.3f\n", r, tg, t, p, $2, $3, $5, $7, cpu / n}' >> "$csv"
      done
    done
  done
done

first_w=${workers%% *}
redis-cli -p "${kv_port[$first_w]}" set benchkey "$(head -c 100 /dev/zero | tr '\0' v)" >/dev/null
wrk_out=$(${client_cpu[@]+"${client_cpu[@]}"} wrk -t2 -c50 -d10s --latency "http://127.0.0.1:${kv_http[$first_w]}/kv/benchkey")

echo "# redis-benchmark -c 50 -r 100000, -n $requests at depth 1 and $((requests * 10)) deeper, $runs runs"
python3 bench/shmkv_bench_summary.py "$csv"
echo "# wrk -t2 -c50 -d10s GET /kv/benchkey (100-byte value, shmkv-${first_w}w)"
echo "$wrk_out" | grep -E "Requests/sec|Latency|50%|99%"
echo "$wrk_out" > "$out/shmkv_bench_wrk.txt"

# Where each server's CPU goes, by stage: perf on shmkv's single worker
# (the 1-worker server, or the first one) and on redis-server, in one more
# depth-16 run of each test.
stage_of() {  # TARGET TEST PIDS...: perf samples of one run, by stage
  local target=$1 t=$2 data="$out/perf_stage.data"
  shift 2
  local pidlist
  pidlist=$(echo "$@" | tr ' ' ',')
  perf record -q -e cpu-clock -g -p "$pidlist" -o "$data" >/dev/null 2>&1 &
  perf_pid=$!
  sleep 0.5  # attached before the client starts
  bench_one "$(target_port "$target")" "$t" 16 $((requests * 10)) >/dev/null
  kill -INT "$perf_pid"
  wait "$perf_pid" 2>/dev/null || true
  perf_pid=
  perf script -i "$data" -F period,ip,sym,dso 2>/dev/null |
    python3 bench/perf_stages.py --label "$target $t -P 16" \
      --requests $((requests * 10))
  rm -f "$data" "$data.old"
}
if [ "$stages" = 1 ]; then
  w1=$first_w
  for w in $workers; do [ "$w" = 1 ] && w1=1; done
  {
    echo "# CPU by stage at depth 16 (perf record -e cpu-clock -g, $((requests * 10)) requests; bench/perf_stages.py)"
    for t in $tests; do
      stage_of redis "$t" "$redis_pid"
      stage_of "shmkv-${w1}w" "$t" $(pgrep -P "${kv_pid[$w1]}" | tr '\n' ' ')
    done
  } | tee "$out/shmkv_stages.txt"
fi

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
    count_syscalls "shmkv-${first_w}w" "${kv_port[$first_w]}" "${kv_pid[$first_w]}" \
      $(pgrep -P "${kv_pid[$first_w]}" | tr '\n' ' ')
  } | tee "$out/shmkv_syscalls.txt"
fi
python3 bench/plot_shmkv.py "$csv" "$out/shmkv_bench.svg"
