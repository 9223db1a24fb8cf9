# Sourced by the bench scripts that start servers: free ports, never the
# defaults (another server on this machine could answer there), and the
# servers' CPU time.

# True when something listens on 127.0.0.1:$1.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A port nothing listens on, picked at random in 20000-59999.
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
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
