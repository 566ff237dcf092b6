# Ravel's head supervisor (run as: bash -c "<this>" ravel-head-supervisor DRIVER_PID DRIVER_START -- CMD...).
# Runs CMD (`ray start --head --block ...`) in a process group of its own and stops that whole group, by its
# process-group id, when the driver that started it is gone, whatever ended the driver (SIGKILL and the OOM
# killer included), or when this supervisor is told to stop (SIGTERM, SIGINT, SIGHUP). DRIVER_START is field
# 22 of /proc/DRIVER_PID/stat (the driver's start time), so that a recycled PID is not taken for the driver.
set -u
driver="$1"
driver_start="$2"
shift 3

# stat_field N PID: field N of /proc/PID/stat (counted as in proc(5); the command name may hold spaces)
stat_field() {
  local s rest
  s="$(cat "/proc/$2/stat" 2>/dev/null)" || return 1
  rest="${s##*) }"
  set -- "$1" $rest
  local n=$(( $1 - 1 ))
  shift
  [ "$n" -ge 2 ] || return 1
  eval "echo \"\${$(( n - 1 ))}\""
}

driver_alive() {
  if [ -n "$driver_start" ]; then
    [ "$(stat_field 22 "$driver")" = "$driver_start" ]
  else
    kill -0 "$driver" 2>/dev/null
  fi
}

setsid "$@" &
head=$!
echo "ravel-head-supervisor: ray pid $head (its own process group), supervising for driver $driver"

# signal_head SIG: the head's process group and the head itself. Right after the fork the head may not have
# called setsid yet (no group of that id then), and a signal to the group alone would miss it.
signal_head() {
  kill "-$1" -- "-$head" 2>/dev/null
  kill "-$1" "$head" 2>/dev/null
}

head_running() {
  kill -0 -- "-$head" 2>/dev/null || { kill -0 "$head" 2>/dev/null && [ "$(stat_field 3 "$head")" != "Z" ]; }
}

stop_group() {
  signal_head TERM
  local i
  for i in $(seq 1 40); do
    head_running || return 0
    sleep 0.1
  done
  echo "ravel-head-supervisor: process group $head still running after 4 s; killing it"
  signal_head KILL
  for i in $(seq 1 20); do
    head_running || return 0
    sleep 0.1
  done
}

trap 'stop_group; wait "$head" 2>/dev/null; exit 143' TERM INT HUP

while :; do
  state="$(stat_field 3 "$head")" || break
  [ "$state" = "Z" ] && break
  if ! driver_alive; then
    echo "ravel-head-supervisor: driver $driver is gone; stopping the Ray head (process group $head)"
    stop_group
    wait "$head" 2>/dev/null
    exit 0
  fi
  sleep 0.5 &
  wait $! 2>/dev/null
done
wait "$head"
rc=$?
kill -TERM -- "-$head" 2>/dev/null # whatever the head left behind in its group
exit "$rc"
