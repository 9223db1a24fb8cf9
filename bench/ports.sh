# Sourced by the bench scripts that start servers: free ports, never the
# defaults (another server on this machine could answer there).

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
