# Sourced by the bench scripts that start servers: free ports, never the
# defaults (another server on this machine could answer there), and the
# servers' CPU time.

# True when something listens on 127.0.0.1:$1.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A port nothing listens on, picked at random below the kernel's ephemeral
# range (ip_local_port_range), so no client's connect() is handed it
# before the server binds it (tests/support/ports.py draws the same way).
free_port() {
  local low p
  read -r low _ < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768
  [ "$low" -ge 2048 ] || low=32768
  local lo=$((low > 17408 ? low - 16384 : 1024))
  while :; do
    p=$((lo + RANDOM % (low - lo)))
    port_in_use "$p" || { echo "$p"; return; }
  done
}

# CPU ticks (user + sys) the given pids have used so far (/proc; a pid
# that is gone counts 0). Divide by `getconf CLK_TCK` for seconds.
ticks() {
  local t=0 p
  for p in "$@"; do
    [ -r /proc/$p/stat ] || continue
    t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat)))
  done
  echo $t
}
