#!/usr/bin/env bash
# run_all.sh: every benchmark of bench/, three runs each, on this machine,
# with the machine recorded beside the results:
#
#   bench/run_all.sh [--runs R] [--out DIR] [--skip-shmkv]
#
# Writes DIR/machine.txt (date, commit, compiler, kernel, THP, lscpu) and
# DIR/<bench>.txt (the runs' own output, run after run). DIR defaults to
# bench/results/<cpu model>; bench/RESULTS.md summarizes the newest run of
# each machine. Needs a release build (cmake --preset release && cmake
# --build --preset release); hash_table_bench's hugepage run needs ~600
# free 2 MiB pages and is skipped without them; shmkv_bench.sh needs
# redis-server, redis-tools and wrk. Run it on a quiet machine: every
# figure is a ratio to a baseline measured in the same run, but a busy
# second core still moves them.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3
out=""
shmkv=1
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --skip-shmkv) shmkv=0; shift ;;
    *) echo "usage: $0 [--runs R] [--out DIR] [--skip-shmkv]" >&2; exit 2 ;;
  esac
done
bin=build/release/bench
[ -x "$bin/hash_map_bench" ] || { echo "no release build: $bin" >&2; exit 1; }
if [ -z "$out" ]; then
  model=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
  slug=$(echo "${model:-unknown}" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9\n' '-' |
         sed 's/--*/-/g; s/^-//; s/-$//')
  out=bench/results/$slug
fi
mkdir -p "$out"

{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "compiler: $(c++ --version | head -n 1)"
  echo "kernel: $(uname -r)"
  echo "thp: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
  echo "hugepages free: $(awk '/HugePages_Free/ {print $2}' /proc/meminfo)"
  echo
  lscpu | grep -E '^(Architecture|CPU\(s\)|Model name|Thread|Core|Socket|Hypervisor|Virtualization|L1d|L1i|L2|L3|NUMA node\(s\))'
} > "$out/machine.txt"
cat "$out/machine.txt"

# run FILE NAME ARGS...: R runs of bench NAME into $out/FILE.txt, each
# headed by its command.
run() {
  local file=$out/$1.txt name=$2
  shift 2
  : > "$file"
  for r in $(seq "$runs"); do
    echo "## run $r: $name $*" | tee -a "$file"
    "$bin/$name" "$@" >> "$file" 2>&1
  done
}
bench() { run "$1" "$@"; }

bench hash_table_bench --keys 2100000 --capacity 2500000 --reps 3
free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
if [ "${free:-0}" -ge 600 ]; then
  run hash_table_bench_huge hash_table_bench --keys 2100000 \
    --capacity 2500000 --reps 3 --huge --no-models
else
  echo "hash_table_bench --huge skipped: $free free hugepages (< 600)" |
    tee "$out/hash_table_bench_huge.txt"
fi
bench hash_map_bench
bench queue_bench
bench percentile_bench
bench double_buf_bench
bench double_table_bench --rounds 11
if [ "$shmkv" = 1 ]; then bench udp_bench --rounds 3 --seconds 2; fi
bench sorted_array_bench

if [ "$shmkv" = 1 ]; then
  # The do-nothing servers' floor, when the probes build has them.
  floor=()
  [ -x build/probes/bench/reply_floor ] && floor=(--floor)
  # Pinned (servers on CPU 0, clients on CPU 1), 1 and 2 workers, with
  # the per-stage breakdown when perf is there.
  stages=()
  command -v perf >/dev/null && stages=(--stages)
  bench/shmkv_bench.sh --runs "$runs" --pin ${stages[@]+"${stages[@]}"} \
    ${floor[@]+"${floor[@]}"} --out "$out" | tee "$out/shmkv_bench.txt"
  bench/shmkv_worker_cpu.sh --runs "$runs" | tee "$out/shmkv_worker_cpu.txt"
  bench/shmkv_collections_bench.sh --out "$out" |
    tee "$out/shmkv_collections_bench.txt"
  bench/shmkv_bgsave_bench.sh --runs "$runs" --out "$out" >/dev/null
fi
echo "results in $out"
