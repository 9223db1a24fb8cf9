# Sourced by the bench scripts that compare shmkv with redis-server on the
# same data: start_server_pair NAME [SHMKV OPTIONS...] starts a
# redis-server (persistence off) and a release shmkv (one worker, its
# segments named after NAME and this shell) on free ports, waits until
# both answer, and stops both and removes shmkv's segments when the
# script exits. With kv_hugepages=1 shmkv's map is on hugepages
# (--hugepages, a System V name). Sets redis_port, kv_port, seg, seg_name,
# redis_pid and kv_pid. An array redis_extra, if set, adds redis-server
# options.
. bench/ports.sh  # free_port, ticks

for t in redis-server redis-benchmark redis-cli python3; do
  command -v $t >/dev/null || { echo "$0: needs $t" >&2; exit 1; }
done

remove_segments() {
  build/release/server/shmkv --name "$seg_name" --remove >/dev/null 2>&1 ||
    true
}

# A server busy in a long command may not stop on SIGTERM at once: after
# ten seconds it, and shmkv's workers, are killed.
stop_server_pair() {
  kill $redis_pid $kv_pid 2>/dev/null || true
  for _ in $(seq 100); do
    kill -0 $redis_pid 2>/dev/null || kill -0 $kv_pid 2>/dev/null || break
    sleep 0.1
  done
  pkill -9 -P $kv_pid 2>/dev/null || true
  kill -9 $redis_pid $kv_pid 2>/dev/null || true
  wait 2>/dev/null || true
  remove_segments
}

start_server_pair() {
  local name=$1
  shift
  local shmkv=build/release/server/shmkv
  [ -x "$shmkv" ] || { echo "$0: build first: cmake --preset release && cmake --build --preset release" >&2; exit 1; }
  redis_port=$(free_port)
  kv_port=$(free_port)
  while [ "$kv_port" = "$redis_port" ]; do kv_port=$(free_port); done
  local kv_http
  kv_http=$(free_port)
  seg=/${name}_$$
  seg_name=posix:$seg
  local pages=()
  if [ "${kv_hugepages:-0}" = 1 ]; then
    # --hugepages: the map on 2 MiB pages, which needs a System V name.
    seg_name=sysv:$((53000 + $$ % 10000))  # the map appends a digit
    pages=(--hugepages)
  fi
  trap stop_server_pair EXIT
  remove_segments
  redis-server --port $redis_port --save '' --appendonly no --daemonize no \
    ${redis_extra[@]+"${redis_extra[@]}"} \
    --logfile /dev/null &
  redis_pid=$!
  "$shmkv" --port $kv_port --http-port $kv_http --name "$seg_name" \
    --workers 1 "${pages[@]}" "$@" 2>/dev/null &
  kv_pid=$!
  local p
  for p in $redis_port $kv_port; do
    for _ in $(seq 600); do redis-cli -p $p ping >/dev/null 2>&1 && break; sleep 0.1; done
    redis-cli -p $p ping >/dev/null 2>&1 || {
      echo "$0: the server on port $p did not start (run shmkv with the same options to see why)" >&2
      exit 1
    }
  done
}
