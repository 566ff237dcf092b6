#!/usr/bin/env bash
# Starts a local multi-node Ray cluster on ONE Linux host, each node in a network namespace of its own, for tests
# that need real nodes (placement on another node, node loss). Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN).
#
#   scripts/cluster.sh up [--nodes N] [--cpus-per-node C] [--head-cpus C] [--memory-mb M] [--object-store-mb O]
#                         [--gpus-per-node G] [--head-gpus G] [--port P] [--dashboard-port D] [--subnet A.B.C]
#                         [--health-check-period-ms MS] [--health-check-failures K] [--timeout S] [--venv DIR]
#   scripts/cluster.sh status                 per node: namespace, IP, `ray start` alive, the GCS's view;
#                                             exit 0 when every node is alive, else 1
#   scripts/cluster.sh exec [--private-tmp DIR]... -- CMD [ARGS...]
#                                             runs CMD in the head's namespace (exit code, stdin/out/err are CMD's)
#   scripts/cluster.sh kill-raylet I          SIGKILLs node I's raylet (node-loss tests); prints its PID
#   scripts/cluster.sh kill-node I            SIGKILLs every process of node I (its namespace's: raylet, agents,
#                                             workers), as when the machine dies; prints how many
#   scripts/cluster.sh pids I                 prints node I's `ray start` PID and raylet PID ("-" when gone)
#   scripts/cluster.sh down                   stops every node by PID, deletes the namespaces; keeps the logs
# Every command also takes --name NAME and --dir DIR (below).
#
# up: N nodes (default 2) in namespaces NAME-n0 (the head), NAME-n1, ... joined by a Linux bridge in a hub
# namespace NAME-hub; node I has address A.B.C.(I+1)/24 (subnet default 10.231.7, or RAVEL_CLUSTER_SUBNET) and
# the custom resource ravel_node_I=1, so tests can pin work to a node. The namespaces have no default route: only
# the subnet and their own loopback are reachable, and nothing on the host talks to those addresses (the host
# would route them to its gateway): every client runs inside a namespace (use `exec`). Per node (defaults):
# --cpus-per-node 2 (--head-cpus: the head's), --memory-mb 3072, --object-store-mb 512, --gpus-per-node 0 (GPUs
# declared to Ray on a CPU machine, to test GPU placement; --head-gpus: the head's). GCS port --port 6379,
# dashboard and Jobs API at http://HEADIP:8265 (--dashboard-port; clients find it in cluster.env or, like Ravel's
# driver, in the GCS). Node death detection: --health-check-period-ms 3000 and
# --health-check-failures 5 (Ray's defaults: ~15 s; 1000 and 3: ~3 s). Waits at most --timeout 120 s for the GCS,
# all N nodes alive and the dashboard, then writes DIR/cluster.env (KEY=VALUE lines: RAY_ADDRESS,
# RAVEL_RAY_DASHBOARD, RAVEL_CLUSTER_HEAD_NS, RAVEL_CLUSTER_HEAD_IP, RAVEL_CLUSTER_NODES, RAVEL_CLUSTER_VENV,
# ...; `set -a; . DIR/cluster.env; set +a` in a shell). A failed up tears down what it started (logs kept).
# `up` on a cluster that is up with the same options and all nodes alive says so and exits 0; with other options
# or a node dead it fails (run `down`). Namespaces left by a crashed run are cleaned up first.
# The virtualenv: --venv DIR, else RAVEL_RAY_VENV, else the one scripts/setup-ray.sh prints (installs if needed).
#
# exec: CMD runs with the virtualenv's bin first on PATH, RAY_ADDRESS and RAVEL_RAY_DASHBOARD (and the rest of
# cluster.env) exported, the caller's other environment and working directory kept, in a private mount namespace
# where DIR/driver-tmp-ray is bind-mounted over /tmp/ray (the Java driver unpacks a 41 MB library into
# /tmp/ray/<millis>/ and never deletes it; emptied at `down`). Each --private-tmp DIR gets a fresh tmpfs over
# DIR (created if missing) that only CMD and its children see.
#
# down: SIGTERMs each node's `ray start --block` (workers first, the head last; only if its PID still has the
# start time recorded at `up`), waits up to 20 s, SIGKILLs by PID whatever is still in the node namespaces after
# a 3 s grace (drivers started with `exec` included), deletes the namespaces, and removes the state but the logs
# (DIR/nodeI/*.log). Prints what it killed. Does nothing, successfully, when nothing is up.
#
# Environment: RAVEL_CLUSTER_NAME (default ravel; --name), RAVEL_CLUSTER_DIR (state; default /tmp/ravel-cluster,
# /tmp/ravel-cluster-NAME for another name; --dir; keep it short: Ray's unix socket paths, 76 characters longer
# with 5-digit PIDs, 78 with 7-digit ones, may have 107, so 31 or 29 at most), RAVEL_CLUSTER_SUBNET,
# RAVEL_RAY_VENV. Never uses `ray stop` or kills by name; never talks to the namespaces' addresses from the host.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
die() { echo "cluster.sh: $*" >&2; exit 1; }
usage_error() { echo "cluster.sh: $* (see scripts/cluster.sh --help)" >&2; exit 2; }
say() { echo "cluster.sh: $*" >&2; }
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}"; }

CMD="${1:-}"
case "$CMD" in
  -h|--help|help) usage; exit 0 ;;
  up|down|status|exec|kill-raylet|kill-node|pids) shift ;;
  "") usage_error "no command given" ;;
  *) usage_error "unknown command '$CMD'" ;;
esac
[ "$(id -u)" = 0 ] || { echo "cluster.sh: needs root (network namespaces: CAP_NET_ADMIN, CAP_SYS_ADMIN)" >&2; exit 2; }

# ---- options ----
NAME="${RAVEL_CLUSTER_NAME:-ravel}"
STATE="${RAVEL_CLUSTER_DIR:-}"
SUBNET="${RAVEL_CLUSTER_SUBNET:-10.231.7}"
VENV_OPT=""
NODES=2 CPUS=2 HEAD_CPUS="" MEMORY_MB=3072 STORE_MB=512 GPUS=0 HEAD_GPUS="" PORT=6379 DASH_PORT=8265
HC_PERIOD_MS=3000 HC_FAILURES=5 TIMEOUT=120
PRIVATE_TMPS=()
NODE_ARG=""
EXEC_ARGV=()

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
need_uint() { is_uint "$2" || usage_error "$1 needs a whole number, got '$2'"; }

while [ $# -gt 0 ]; do
  opt="$1" val="" has_val=0
  case "$opt" in
    --*=*) val="${opt#*=}" opt="${opt%%=*}" has_val=1 ;;
  esac
  case "$opt" in
    --) shift; [ "$CMD" = exec ] || usage_error "unexpected '--' for '$CMD'"; EXEC_ARGV=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    --*)
      # every option but the flags above takes a value
      if [ "$has_val" = 0 ]; then
        [ $# -ge 2 ] || usage_error "option '$opt' needs a value"
        val="$2"; shift
      fi
      case "$CMD:$opt" in
        *:--name) NAME="$val" ;;
        *:--dir) STATE="$val" ;;
        up:--nodes) need_uint "$opt" "$val"; NODES="$val" ;;
        up:--cpus-per-node) need_uint "$opt" "$val"; CPUS="$val" ;;
        up:--head-cpus) need_uint "$opt" "$val"; HEAD_CPUS="$val" ;;
        up:--memory-mb) need_uint "$opt" "$val"; MEMORY_MB="$val" ;;
        up:--object-store-mb) need_uint "$opt" "$val"; STORE_MB="$val" ;;
        up:--gpus-per-node) need_uint "$opt" "$val"; GPUS="$val" ;;
        up:--head-gpus) need_uint "$opt" "$val"; HEAD_GPUS="$val" ;;
        up:--port) need_uint "$opt" "$val"; PORT="$val" ;;
        up:--dashboard-port) need_uint "$opt" "$val"; DASH_PORT="$val" ;;
        up:--subnet) SUBNET="$val" ;;
        up:--health-check-period-ms) need_uint "$opt" "$val"; HC_PERIOD_MS="$val" ;;
        up:--health-check-failures) need_uint "$opt" "$val"; HC_FAILURES="$val" ;;
        up:--timeout) need_uint "$opt" "$val"; TIMEOUT="$val" ;;
        up:--venv) VENV_OPT="$val" ;;
        exec:--private-tmp) PRIVATE_TMPS+=("$val") ;;
        *) usage_error "unknown option '$opt' for '$CMD'" ;;
      esac
      ;;
    *)
      if [[ "$CMD" =~ ^(kill-raylet|kill-node|pids)$ ]] && [ -z "$NODE_ARG" ]; then NODE_ARG="$opt"
      else usage_error "unexpected argument '$opt' for '$CMD'"; fi
      ;;
  esac
  shift
done

[[ "$NAME" =~ ^[A-Za-z0-9][A-Za-z0-9_-]{0,23}$ ]] || usage_error "cluster name '$NAME' must be 1-24 of [A-Za-z0-9_-]"
if [ -z "$STATE" ]; then
  if [ "$NAME" = ravel ]; then STATE=/tmp/ravel-cluster; else STATE="/tmp/ravel-cluster-$NAME"; fi
fi
case "$STATE" in /*) ;; *) STATE="$PWD/$STATE" ;; esac
STATE="${STATE%/}"
ENV_FILE="$STATE/cluster.env"
HUB_NS="$NAME-hub"
node_ns() { echo "$NAME-n$1"; }

# ---- small helpers ----
now() { echo "${EPOCHREALTIME/,/.}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# the start time of a process (field 22 of /proc/PID/stat), to tell it from a later one with its recycled PID
# shellcheck disable=SC2086 # split the fields (after the command's name) on purpose
start_time() { local s; s="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1; set -- ${s##*) }; echo "${20}"; }
# alive PID START: PID runs (not a zombie) and is still the process that had START
alive() {
  local s
  [ -n "$1" ] && [ -n "$2" ] || return 1
  s="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  # shellcheck disable=SC2086 # split the fields on purpose
  set -- "$1" "$2" ${s##*) }
  [ "$3" != Z ] && [ "$3" != X ] && [ "${22}" = "$2" ]
}
cmdline() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | cut -c1-120; }
in_ns() { ip netns identify "$1" 2>/dev/null | grep -qxF "$2"; }
ns_names() { ip netns list 2>/dev/null | awk '{ print $1 }'; }
ns_exists() { ns_names | grep -qxF "$1"; }
our_namespaces() { ns_names | grep -E "^$NAME-(n[0-9]+|hub)\$" || true; }
# node indices known from the state dir or the namespaces, highest first (workers before the head)
node_indices() {
  {
    local f
    for f in "$STATE"/node*/pid; do [ -f "$f" ] && basename "$(dirname "$f")" | sed 's/^node//'; done
    ns_names | sed -n "s/^$NAME-n\([0-9][0-9]*\)\$/\1/p"
  } | sort -un -r
}
# read_pid I: sets PID_I and START_I from DIR/nodeI/pid (empty when none)
read_pid() {
  PID_I="" START_I=""
  if [ -f "$STATE/node$1/pid" ]; then read -r PID_I START_I <"$STATE/node$1/pid" || true; fi
}
node_ip_of() { ip -n "$(node_ns "$1")" -4 -o addr show dev eth0 2>/dev/null | awk '{ sub(/\/.*/, "", $4); print $4; exit }'; }
load_env() {
  [ -f "$ENV_FILE" ] || return 1
  eval "$(
    set -a
    # shellcheck disable=SC1090
    . "$ENV_FILE"
    for k in RAY_ADDRESS RAVEL_RAY_DASHBOARD RAVEL_CLUSTER_HEAD_NS RAVEL_CLUSTER_HEAD_IP RAVEL_CLUSTER_NODES \
             RAVEL_CLUSTER_VENV; do printf 'CE_%s=%q\n' "$k" "${!k:-}"; done
  )"
}
resolve_venv() {
  if [ -n "$VENV_OPT" ]; then VENV="$VENV_OPT"
  elif [ -n "${RAVEL_RAY_VENV:-}" ]; then VENV="$RAVEL_RAY_VENV"
  else VENV="$("$HERE/setup-ray.sh")" || die "scripts/setup-ray.sh failed"
  fi
  VENV="${VENV%/}"
  [ -x "$VENV/bin/ray" ] && [ -x "$VENV/bin/python" ] || die "no Ray in virtualenv '$VENV' (no bin/ray)"
}
# the raylet of node I: a child of its `ray start` (else any process in its namespace) running .../raylet/raylet
raylet_pid() {
  local ns p
  ns="$(node_ns "$1")"
  read_pid "$1"
  if alive "$PID_I" "$START_I"; then
    for p in $(ps -o pid= --ppid "$PID_I" 2>/dev/null); do
      if is_raylet "$p" && in_ns "$p" "$ns"; then echo "$p"; return 0; fi
    done
  fi
  ns_exists "$ns" || return 1
  for p in $(ip netns pids "$ns" 2>/dev/null); do
    if is_raylet "$p" && in_ns "$p" "$ns"; then echo "$p"; return 0; fi
  done
  return 1
}
is_raylet() { local a0; a0="$(tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | head -n 1)"; [[ "$a0" == */raylet/raylet ]]; }

# The GCS's view of the nodes, asked from inside the head's namespace: one line "IP alive|dead NODE_ID" per node
# address (an alive entry wins over dead ones of the same address). Waits up to WAIT_S seconds for every address
# in WANT_IPS to be alive. Exit 3 when the GCS does not answer. (GcsClient's constructor blocks ~40 s on a dead
# GCS, so a TCP connect comes first.)
# shellcheck disable=SC2016
GCS_PY='
import socket, sys, time
addr, wait_s, want = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
host, port = addr.rsplit(":", 1)
deadline = time.monotonic() + wait_s
client, rows, err = None, None, "the GCS at %s does not answer" % addr
while True:
    if client is None:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            from ray._raylet import GcsClient
            client = GcsClient(address=addr)
        except Exception as e:
            err = "the GCS at %s does not answer (%s: %s)" % (addr, type(e).__name__, e)
    if client is not None:
        try:
            found = {}
            for n in client.get_all_node_info(timeout=2).values():
                ip, up, nid = n.node_manager_address, n.state == 0, n.node_id.hex()
                if ip not in found or (up and not found[ip][0]):
                    found[ip] = (up, nid)
            rows = found
            if all(rows.get(ip, (False,))[0] for ip in want):
                break
        except Exception as e:
            err = "the GCS at %s: %s: %s" % (addr, type(e).__name__, e)
    if time.monotonic() >= deadline:
        break
    time.sleep(0.5)
if rows is None:
    print(err.splitlines()[0], file=sys.stderr)
    sys.exit(3)
for ip, (up, nid) in sorted(rows.items()):
    print(ip, "alive" if up else "dead", nid)
'
# gcs_view HEAD_NS ADDRESS VENV WAIT_S [IP...]: GCS_PY's lines on stdout, its own error line on stderr
gcs_view() {
  local ns="$1" addr="$2" venv="$3" wait_s="$4" err rc=0 out
  shift 4
  err="$(mktemp "${TMPDIR:-/tmp}/cluster-gcs.XXXXXX")"
  out="$(timeout $(( ${wait_s%.*} + 60 )) ip netns exec "$ns" env PATH="$venv/bin:$PATH" RAY_USAGE_STATS_ENABLED=0 \
    "$venv/bin/python" -c "$GCS_PY" "$addr" "$wait_s" "$@" 2>"$err")" || rc=$?
  # the C++ client logs its retries on stderr: keep only our own last line
  [ "$rc" = 0 ] || grep -v '^\[' "$err" | tail -n 1 >&2 || true
  rm -f "$err"
  printf '%s\n' "$out"
  return "$rc"
}

# ---- down ----
KILLED=0
# do_down: stops everything of cluster NAME; prints what it stopped on stdout; returns 1 if something survived
do_down() {
  local t0 i ns pids p deadline left=0 any=0 group
  t0="$(now)"
  local -a nodes workers=() head=()
  mapfile -t nodes < <(node_indices)
  for i in "${nodes[@]}"; do if [ "$i" = 0 ]; then head=(0); else workers+=("$i"); fi; done
  # 1. SIGTERM each `ray start --block` by its PID: the workers together, then the head
  for group in workers head; do
    local -a members=() termed=()
    if [ "$group" = workers ]; then members=("${workers[@]}"); else members=("${head[@]}"); fi
    for i in "${members[@]}"; do
      read_pid "$i"
      [ -n "$PID_I" ] || continue
      any=1
      if alive "$PID_I" "$START_I"; then
        ns="$(node_ns "$i")"
        if ns_exists "$ns" && ! in_ns "$PID_I" "$ns"; then
          echo "node $i: pid $PID_I is not in namespace $ns; not signalled"
          continue
        fi
        if kill -TERM "$PID_I" 2>/dev/null; then termed+=("$i"); echo "node $i: SIGTERM ray start (pid $PID_I)"; fi
      fi
    done
    deadline=$(( EPOCHSECONDS + 20 ))
    for i in "${termed[@]}"; do
      read_pid "$i"
      while alive "$PID_I" "$START_I" && [ "$EPOCHSECONDS" -lt "$deadline" ]; do sleep 0.2; done
      if alive "$PID_I" "$START_I"; then
        kill -KILL "$PID_I" 2>/dev/null && echo "node $i: ray start (pid $PID_I) still up after 20 s: SIGKILL"
        KILLED=$(( KILLED + 1 ))
      fi
    done
  done
  # 2. what is left in the node namespaces (Ray's agents can hang on exit, drivers of `exec`): a 3 s grace, then
  #    SIGKILL by PID, each checked to be in our namespace right before
  local -a node_nss=()
  mapfile -t node_nss < <(our_namespaces | grep -vxF "$HUB_NS" || true)
  [ "${#node_nss[@]}" = 0 ] || any=1
  deadline=$(( EPOCHSECONDS + 3 ))
  while [ "$EPOCHSECONDS" -le "$deadline" ]; do
    pids=""
    for ns in "${node_nss[@]}"; do pids+="$(ip netns pids "$ns" 2>/dev/null || true)"; done
    [ -n "$pids" ] || break
    sleep 0.2
  done
  for ns in "${node_nss[@]}"; do
    for p in $(ip netns pids "$ns" 2>/dev/null || true); do
      if in_ns "$p" "$ns"; then
        echo "$ns: SIGKILL pid $p: $(cmdline "$p")"
        kill -KILL "$p" 2>/dev/null || true
        KILLED=$(( KILLED + 1 ))
      fi
    done
  done
  deadline=$(( EPOCHSECONDS + 10 ))
  for ns in "${node_nss[@]}"; do
    while [ -n "$(ip netns pids "$ns" 2>/dev/null || true)" ] && [ "$EPOCHSECONDS" -lt "$deadline" ]; do sleep 0.2; done
    p="$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ' || true)"
    if [ -n "$p" ]; then echo "$ns: pids $p did not exit after SIGKILL" >&2; left=1; fi
  done
  # 3. the namespaces (deleting a node's namespace destroys its veth; the hub's, the bridge and the peers)
  for ns in $(our_namespaces); do
    any=1
    ip netns del "$ns" 2>/dev/null || { echo "could not delete namespace $ns" >&2; left=1; }
  done
  # 4. the state but the logs: Ray's own main logs are kept beside ray-start.log first
  for i in "${nodes[@]}"; do
    local d="$STATE/node$i" f
    if [ -d "$d/tmp" ]; then
      for f in raylet.out raylet.err gcs_server.out gcs_server.err; do
        if [ -f "$d/tmp/session_latest/logs/$f" ]; then tail -c 2000000 "$d/tmp/session_latest/logs/$f" >"$d/$f.log" || true; fi
      done
    fi
    rm -rf "$d/tmp" "$d/pid"
  done
  rm -rf "$STATE/driver-tmp-ray" "$ENV_FILE" "$STATE/config"
  # `ip netns add` leaves /run/netns mounted on itself: drop it when no namespace at all is left
  if mountpoint -q /run/netns 2>/dev/null && [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
    umount /run/netns 2>/dev/null && rmdir /run/netns 2>/dev/null || true
  fi
  if [ "$any" = 1 ]; then echo "cluster '$NAME' down in $(since "$t0") s ($KILLED process(es) SIGKILLed)"; else echo "cluster '$NAME': nothing to stop"; fi
  return "$left"
}

# ---- up ----
# start_node I IP HEAD_IP: `ray start --block` in node I's namespace, in the background; records PID and start time
start_node() {
  local i="$1" ip="$2" head_ip="$3" ns d log cpus gpus
  ns="$(node_ns "$i")" d="$STATE/node$i" log="$STATE/node$i/ray-start.log"
  mkdir -p "$d/tmp"
  : >"$log"
  local -a env_=(env -u RAY_ADDRESS PATH="$VENV/bin:$PATH" RAY_USAGE_STATS_ENABLED=0 RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=0)
  local -a args=(ray start --block --node-ip-address "$ip" --temp-dir "$d/tmp" --disable-usage-stats
    --memory $(( MEMORY_MB * 1024 * 1024 )) --object-store-memory $(( STORE_MB * 1024 * 1024 ))
    --resources "{\"ravel_node_$i\": 1}")
  if [ "$i" = 0 ]; then
    cpus="${HEAD_CPUS:-$CPUS}" gpus="${HEAD_GPUS:-$GPUS}"
    env_+=(RAY_health_check_period_ms="$HC_PERIOD_MS" RAY_health_check_failure_threshold="$HC_FAILURES")
    args+=(--head --port "$PORT" --dashboard-host "$ip" --dashboard-port "$DASH_PORT")
  else
    cpus="$CPUS" gpus="$GPUS"
    args+=(--address "$head_ip:$PORT")
  fi
  args+=(--num-cpus "$cpus")
  [ "$gpus" = 0 ] || args+=(--num-gpus "$gpus")
  echo "# $(date '+%F %T') ip netns exec $ns ${env_[*]:4} ${args[*]}" >>"$log"
  # setsid: out of the caller's process group and terminal (no fork: a background job is no group leader);
  # ip netns exec and env exec, so $! is the PID of `ray start` itself. The lock's fd is not inherited.
  setsid ip netns exec "$ns" "${env_[@]}" "${args[@]}" </dev/null >>"$log" 2>&1 9>&- &
  local pid=$! st
  st="$(start_time "$pid")" || fail_up "ray start of node $i (pid $pid) exited at once" "$i"
  echo "$pid $st" >"$d/pid"
}

UP_STARTED=0 UP_DONE=0
on_up_exit() {
  local rc=$?
  if [ "$UP_STARTED" = 1 ] && [ "$UP_DONE" = 0 ]; then
    say "up failed: tearing down what it started (logs kept in $STATE/node*/)"
    do_down >&2 || true
  fi
  exit "$rc"
}
# fail_up MESSAGE [I...]: the tail of the log of node I (default: every node), then fail (the trap tears down)
fail_up() {
  local msg="$1" i f
  shift
  echo "cluster.sh: up: $msg" >&2
  [ $# -gt 0 ] || set -- $(seq 0 $(( NODES - 1 )))
  for i in "$@"; do
    f="$STATE/node$i/ray-start.log"
    [ -s "$f" ] && { echo "--- $f (last 20 lines)"; tail -n 20 "$f"; } >&2
    for f in "$STATE/node$i"/tmp/session_latest/logs/{raylet,gcs_server}.err; do
      [ -s "$f" ] && { echo "--- $f (last 10 lines)"; tail -n 10 "$f"; } >&2
    done
  done
  exit 1
}
config_string() {
  echo "nodes=$NODES cpus=$CPUS head_cpus=${HEAD_CPUS:-$CPUS} memory_mb=$MEMORY_MB object_store_mb=$STORE_MB" \
       "gpus=$GPUS head_gpus=${HEAD_GPUS:-$GPUS} port=$PORT dashboard_port=$DASH_PORT subnet=$SUBNET" \
       "hc_period_ms=$HC_PERIOD_MS" \
       "hc_failures=$HC_FAILURES venv=$VENV"
}
# every recorded `ray start` alive and every node alive in the GCS (prints why not on stderr)
healthy() {
  local i n view ip
  load_env || return 1
  n="${CE_RAVEL_CLUSTER_NODES:-0}"
  for (( i = 0; i < n; i++ )); do
    read_pid "$i"
    alive "$PID_I" "$START_I" || { say "node $i: its ray start (pid ${PID_I:-?}) is gone"; return 1; }
  done
  view="$(gcs_view "$CE_RAVEL_CLUSTER_HEAD_NS" "$CE_RAY_ADDRESS" "$CE_RAVEL_CLUSTER_VENV" 0)" || return 1
  for (( i = 0; i < n; i++ )); do
    ip="$(node_ip_of "$i")"
    grep -q "^$ip alive " <<<"$view" || { say "node $i ($ip) is not alive in the GCS"; return 1; }
  done
}

cmd_up() {
  local t0 i ip head_ip deadline want view rest
  [[ "$SUBNET" =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] && [ "${BASH_REMATCH[1]}" -le 255 ] \
    && [ "${BASH_REMATCH[2]}" -le 255 ] && [ "${BASH_REMATCH[3]}" -le 255 ] \
    || usage_error "--subnet needs the first three octets of a /24, such as 10.231.7; got '$SUBNET'"
  [ "$NODES" -ge 1 ] && [ "$NODES" -le 64 ] || usage_error "--nodes must be 1..64, got $NODES"
  [ "$CPUS" -ge 1 ] || usage_error "--cpus-per-node must be at least 1"
  [ "$STORE_MB" -ge 80 ] || usage_error "--object-store-mb must be at least 80 (Ray's minimum is 75 MiB)"
  [ "$MEMORY_MB" -ge 1 ] && [ "$PORT" -ge 1 ] && [ "$PORT" -le 65535 ] && [ "$DASH_PORT" -ge 1 ] \
    && [ "$DASH_PORT" -le 65535 ] && [ "$PORT" != "$DASH_PORT" ] || usage_error "bad --memory-mb, --port or --dashboard-port"
  [ "$HC_PERIOD_MS" -ge 1 ] && [ "$HC_FAILURES" -ge 1 ] && [ "$TIMEOUT" -ge 1 ] \
    || usage_error "--health-check-period-ms, --health-check-failures and --timeout must be at least 1"
  # Ray's unix sockets live at TEMPDIR/session_<date>_<time>_<micros>_<head pid>/sockets/<name>, and a socket
  # path may have 107 characters at most: the head has dash_MetricsHead (16; the dashboard's longest by default),
  # the other nodes plasma_store (12); the PID has as many digits as the largest one this host hands out
  local pid_digits last_node longest_head longest_worker
  pid_digits=$(( $(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 4194304) - 1 )) last_node=$(( NODES - 1 ))
  pid_digits=${#pid_digits}
  # STATE + "/node0/tmp" + "/session_YYYY-MM-DD_HH-MM-SS_UUUUUU_" + PID + "/sockets/" + name
  longest_head=$(( ${#STATE} + 10 + 36 + pid_digits + 9 + 16 ))
  longest_worker=$(( ${#STATE} + 9 + ${#last_node} + 36 + pid_digits + 9 + 12 ))
  [ "$longest_head" -le 107 ] && [ "$longest_worker" -le 107 ] \
    || die "state dir '$STATE' (${#STATE} characters) is too long for Ray's unix socket paths (the head's would have $longest_head, at most 107): use a shorter --dir / RAVEL_CLUSTER_DIR (at most $(( ${#STATE} + 107 - longest_head )) characters)"
  resolve_venv
  mkdir -p "$STATE"
  exec 9>>"$STATE/.lock"
  flock -w 300 9 || die "another cluster.sh holds $STATE/.lock"
  local config
  config="$(config_string)"

  # an earlier cluster of this name
  local -a nss
  mapfile -t nss < <(our_namespaces)
  if [ "${#nss[@]}" -gt 0 ] || [ -n "$(node_indices)" ]; then
    if [ -f "$ENV_FILE" ] && healthy; then
      if [ "$(cat "$STATE/config" 2>/dev/null)" = "$config" ]; then
        echo "cluster '$NAME' is already up: $CE_RAVEL_CLUSTER_NODES nodes alive, RAY_ADDRESS=$CE_RAY_ADDRESS, env in $ENV_FILE"
        exit 0
      fi
      die "cluster '$NAME' is up with other options ($(cat "$STATE/config" 2>/dev/null)): run 'scripts/cluster.sh down' first"
    fi
    local live=0 p
    for i in $(node_indices); do read_pid "$i"; if alive "$PID_I" "$START_I"; then live=1; fi; done
    if [ -f "$ENV_FILE" ] && [ "$live" = 1 ]; then
      die "cluster '$NAME' is up but not every node is alive: run 'scripts/cluster.sh down' first"
    fi
    # processes in the namespaces but none of them mentions our state dir: another state dir's cluster
    local procs=0 mine=0
    for i in "${nss[@]}"; do
      for p in $(ip netns pids "$i" 2>/dev/null || true); do
        procs=1
        if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$STATE/"; then mine=1; fi
      done
    done
    if [ "$live" = 0 ] && [ "$procs" = 1 ] && [ "$mine" = 0 ]; then
      die "namespaces of cluster '$NAME' hold processes not started from $STATE: run 'scripts/cluster.sh down' with the same RAVEL_CLUSTER_NAME first"
    fi
    say "cleaning up what an earlier run of cluster '$NAME' left"
    do_down >&2 || die "could not clean up the earlier run"
  fi

  t0="$(now)"
  UP_STARTED=1
  trap on_up_exit EXIT
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exit 143' TERM
  rm -rf "$STATE/driver-tmp-ray" "$ENV_FILE" "$STATE/config"

  # the network: a bridge in the hub namespace, one veth per node made directly inside the two namespaces
  ip netns add "$HUB_NS"
  ip -n "$HUB_NS" link set lo up
  ip -n "$HUB_NS" link add br0 type bridge stp_state 0 forward_delay 0
  ip -n "$HUB_NS" link set br0 up
  for (( i = 0; i < NODES; i++ )); do
    local ns; ns="$(node_ns "$i")"
    ip netns add "$ns"
    ip link add name eth0 netns "$ns" type veth peer name "p$i" netns "$HUB_NS"
    ip -n "$HUB_NS" link set "p$i" master br0
    ip -n "$HUB_NS" link set "p$i" up
    ip -n "$ns" addr add "$SUBNET.$(( i + 1 ))/24" dev eth0
    ip -n "$ns" link set lo up
    ip -n "$ns" link set eth0 up
  done
  head_ip="$SUBNET.1"
  # the veths come up within a moment
  deadline=$(( EPOCHSECONDS + 10 ))
  for (( i = 0; i < NODES; i++ )); do
    until ip -n "$(node_ns "$i")" -br link show dev eth0 | grep -q ' UP '; do
      [ "$EPOCHSECONDS" -lt "$deadline" ] || fail_up "eth0 of $(node_ns "$i") did not come up"
      sleep 0.1
    done
  done
  say "network of $NODES node(s) ready after $(since "$t0") s ($SUBNET.0/24, bridge in $HUB_NS)"

  deadline=$(( EPOCHSECONDS + TIMEOUT ))
  start_node 0 "$head_ip" "$head_ip"
  # the GCS port, from the last node's namespace: also proves the path through the bridge
  local probe_ns; probe_ns="$(node_ns $(( NODES - 1 )))"
  read_pid 0
  until ip netns exec "$probe_ns" timeout 2 bash -c "exec 3<>/dev/tcp/$head_ip/$PORT" 2>/dev/null; do
    alive "$PID_I" "$START_I" || fail_up "the head's ray start (pid $PID_I) exited" 0
    [ "$EPOCHSECONDS" -lt "$deadline" ] || fail_up "the GCS did not listen on $head_ip:$PORT within $TIMEOUT s" 0
    sleep 0.2
  done
  say "GCS answering at $head_ip:$PORT after $(since "$t0") s"
  for (( i = 1; i < NODES; i++ )); do start_node "$i" "$SUBNET.$(( i + 1 ))" "$head_ip"; done

  want=()
  for (( i = 0; i < NODES; i++ )); do want+=("$SUBNET.$(( i + 1 ))"); done
  while :; do
    rest=$(( deadline - EPOCHSECONDS ))
    [ "$rest" -gt 0 ] || fail_up "not all $NODES nodes alive within $TIMEOUT s; the GCS sees: $(tr '\n' ';' <<<"${view:-nothing}")"
    view="$(gcs_view "$(node_ns 0)" "$head_ip:$PORT" "$VENV" "$(( rest < 5 ? rest : 5 ))" "${want[@]}")" || view=""
    local missing=0
    for ip in "${want[@]}"; do grep -q "^$ip alive " <<<"$view" || missing=1; done
    [ "$missing" = 1 ] || break
    for (( i = 0; i < NODES; i++ )); do
      read_pid "$i"
      alive "$PID_I" "$START_I" || fail_up "ray start of node $i (pid $PID_I) exited" "$i"
    done
  done
  say "$NODES node(s) alive after $(since "$t0") s"
  until ip netns exec "$(node_ns 0)" curl -sf -m 2 -o /dev/null "http://$head_ip:$DASH_PORT/api/version"; do
    [ "$EPOCHSECONDS" -lt "$deadline" ] || fail_up "the dashboard at http://$head_ip:$DASH_PORT did not answer within $TIMEOUT s" 0
    read_pid 0
    alive "$PID_I" "$START_I" || fail_up "the head's ray start (pid $PID_I) exited" 0
    sleep 0.5
  done

  {
    printf 'RAY_ADDRESS=%q\n' "$head_ip:$PORT"
    printf 'RAVEL_RAY_DASHBOARD=%q\n' "http://$head_ip:$DASH_PORT"
    printf 'RAVEL_CLUSTER_NAME=%q\n' "$NAME"
    printf 'RAVEL_CLUSTER_HEAD_NS=%q\n' "$(node_ns 0)"
    printf 'RAVEL_CLUSTER_HEAD_IP=%q\n' "$head_ip"
    printf 'RAVEL_CLUSTER_NODES=%q\n' "$NODES"
    printf 'RAVEL_CLUSTER_SUBNET=%q\n' "$SUBNET"
    printf 'RAVEL_CLUSTER_DIR=%q\n' "$STATE"
    printf 'RAVEL_CLUSTER_VENV=%q\n' "$VENV"
  } >"$ENV_FILE.new"
  mv "$ENV_FILE.new" "$ENV_FILE"
  echo "$config" >"$STATE/config"
  mkdir -p "$STATE/driver-tmp-ray"
  UP_DONE=1
  echo "cluster '$NAME' up in $(since "$t0") s: $NODES node(s), RAY_ADDRESS=$head_ip:$PORT, dashboard http://$head_ip:$DASH_PORT"
  for (( i = 0; i < NODES; i++ )); do
    read_pid "$i"
    echo "  node $i: $(node_ns "$i") $SUBNET.$(( i + 1 )) ray start pid $PID_I$([ "$i" = 0 ] && echo ' (head)')"
  done
  echo "  env: $ENV_FILE; run clients with: scripts/cluster.sh exec -- CMD"
}

# ---- status ----
cmd_status() {
  local n i ns ip view="" gcs_ok=1 all=0 proc gcs line
  if ! load_env; then
    if [ -z "$(our_namespaces)" ] && [ -z "$(node_indices)" ]; then echo "cluster '$NAME': not up"; exit 1; fi
    echo "cluster '$NAME': partly there (no $ENV_FILE: an up that failed or was interrupted; run down)"
    CE_RAVEL_CLUSTER_NODES="$(node_indices | head -n 1)"; CE_RAVEL_CLUSTER_NODES=$(( ${CE_RAVEL_CLUSTER_NODES:--1} + 1 ))
    all=1 gcs_ok=0
  fi
  n="$CE_RAVEL_CLUSTER_NODES"
  if [ "$gcs_ok" = 1 ]; then
    if ns_exists "$CE_RAVEL_CLUSTER_HEAD_NS"; then
      view="$(gcs_view "$CE_RAVEL_CLUSTER_HEAD_NS" "$CE_RAY_ADDRESS" "$CE_RAVEL_CLUSTER_VENV" 0 2>&1)" || gcs_ok=0
    else
      gcs_ok=0 view="namespace $CE_RAVEL_CLUSTER_HEAD_NS is gone"
    fi
    echo "cluster '$NAME': $n node(s), RAY_ADDRESS=$CE_RAY_ADDRESS, dashboard $CE_RAVEL_RAY_DASHBOARD"
    [ "$gcs_ok" = 1 ] || { echo "  GCS: ${view:-no answer}"; all=1; }
  fi
  printf '  %-4s %-14s %-15s %-20s %-6s %s\n' node namespace ip "ray start" gcs "node id"
  for (( i = 0; i < n; i++ )); do
    ns="$(node_ns "$i")"
    ip="$(node_ip_of "$i")"
    read_pid "$i"
    if alive "$PID_I" "$START_I"; then proc="$PID_I alive"; else proc="${PID_I:--} gone"; all=1; fi
    gcs="-" line=""
    if [ "$gcs_ok" = 1 ] && [ -n "$ip" ]; then
      line="$(grep "^$ip " <<<"$view" || true)"
      gcs="$(awk '{ print $2 }' <<<"$line")"
      [ -n "$gcs" ] || gcs="absent"
    fi
    [ "$gcs" = alive ] || all=1
    ns_exists "$ns" || { ns="$ns(gone)"; all=1; }
    printf '  %-4s %-14s %-15s %-20s %-6s %s\n' "$i" "$ns" "${ip:--}" "$proc" "$gcs" "$(awk '{ print $3 }' <<<"$line")"
  done
  exit "$all"
}

# ---- exec ----
# shellcheck disable=SC2016
EXEC_INNER='
set -e
drv="$1" n="$2"
shift 2
mount --bind "$drv" /tmp/ray || { echo "cluster.sh: exec: could not bind-mount $drv over /tmp/ray" >&2; exit 125; }
while [ "$n" -gt 0 ]; do
  mount -t tmpfs -o mode=1777,size=50% ravel-private-tmp "$1" \
    || { echo "cluster.sh: exec: could not mount a tmpfs over $1" >&2; exit 125; }
  shift; n=$((n - 1))
done
exec "$@"
'
cmd_exec() {
  [ "${#EXEC_ARGV[@]}" -gt 0 ] || usage_error "exec needs '-- CMD [ARGS...]'"
  load_env || die "cluster '$NAME' is not up (no $ENV_FILE): run 'scripts/cluster.sh up' first"
  ns_exists "$CE_RAVEL_CLUSTER_HEAD_NS" || die "namespace $CE_RAVEL_CLUSTER_HEAD_NS is gone: run 'scripts/cluster.sh down' and 'up'"
  local d
  for d in "${PRIVATE_TMPS[@]}"; do
    case "$d" in /?*) ;; *) usage_error "--private-tmp needs an absolute directory, got '$d'" ;; esac
    case "${d%/}" in /tmp/ray|/tmp/ray/*|/proc*|/sys*|/dev*) usage_error "--private-tmp $d: not allowed" ;; esac
    mkdir -p "$d"
  done
  mkdir -p "$STATE/driver-tmp-ray" /tmp/ray
  # `ip netns exec` gives the command a mount namespace of its own (a slave of the host's): check, else unshare
  local -a priv=()
  if [ "$(ip netns exec "$CE_RAVEL_CLUSTER_HEAD_NS" readlink /proc/self/ns/mnt)" = "$(readlink /proc/self/ns/mnt)" ]; then
    priv=(unshare --mount --propagation slave)
  fi
  exec ip netns exec "$CE_RAVEL_CLUSTER_HEAD_NS" "${priv[@]}" env PATH="$CE_RAVEL_CLUSTER_VENV/bin:$PATH" \
    RAY_ADDRESS="$CE_RAY_ADDRESS" RAVEL_RAY_DASHBOARD="$CE_RAVEL_RAY_DASHBOARD" \
    RAVEL_CLUSTER_HEAD_NS="$CE_RAVEL_CLUSTER_HEAD_NS" RAVEL_CLUSTER_HEAD_IP="$CE_RAVEL_CLUSTER_HEAD_IP" \
    RAVEL_CLUSTER_NODES="$CE_RAVEL_CLUSTER_NODES" RAVEL_CLUSTER_VENV="$CE_RAVEL_CLUSTER_VENV" \
    RAVEL_CLUSTER_NAME="$NAME" RAVEL_CLUSTER_DIR="$STATE" \
    sh -c "$EXEC_INNER" cluster.sh-exec "$STATE/driver-tmp-ray" "${#PRIVATE_TMPS[@]}" "${PRIVATE_TMPS[@]}" \
    "${EXEC_ARGV[@]}"
}

# ---- kill-raylet, pids ----
node_arg() {
  [ -n "$NODE_ARG" ] || usage_error "$CMD needs a node index"
  is_uint "$NODE_ARG" || usage_error "$CMD needs a node index, got '$NODE_ARG'"
  [ -f "$STATE/node$NODE_ARG/pid" ] || die "node $NODE_ARG of cluster '$NAME' is not up (no $STATE/node$NODE_ARG/pid)"
}
cmd_kill_raylet() {
  node_arg
  local p
  p="$(raylet_pid "$NODE_ARG")" || die "node $NODE_ARG has no raylet running"
  in_ns "$p" "$(node_ns "$NODE_ARG")" || die "raylet pid $p is not in $(node_ns "$NODE_ARG")"
  kill -KILL "$p"
  echo "$p"
}
cmd_kill_node() {
  node_arg
  [ "$NODE_ARG" != 0 ] || die "kill-node 0 would kill the head; lose a worker node instead"
  local ns p n=0
  ns="$(node_ns "$NODE_ARG")"
  ns_exists "$ns" || die "namespace $ns is gone"
  # the raylet first, so that nothing it supervises is started again, then everything else in the namespace
  if p="$(raylet_pid "$NODE_ARG")"; then kill -KILL "$p" 2>/dev/null && n=$(( n + 1 )); fi
  for p in $(ip netns pids "$ns" 2>/dev/null || true); do
    if in_ns "$p" "$ns"; then kill -KILL "$p" 2>/dev/null && n=$(( n + 1 )); fi
  done
  echo "$n"
}
cmd_pids() {
  node_arg
  local r
  read_pid "$NODE_ARG"
  alive "$PID_I" "$START_I" || die "node $NODE_ARG: its ray start (pid $PID_I) is gone"
  r="$(raylet_pid "$NODE_ARG")" || r="-"
  echo "$PID_I $r"
}

case "$CMD" in
  up) cmd_up ;;
  down)
    [ -d "$STATE" ] || [ -n "$(our_namespaces)" ] || { echo "cluster '$NAME': nothing to stop"; exit 0; }
    mkdir -p "$STATE"
    exec 9>>"$STATE/.lock"
    flock -w 300 9 || die "another cluster.sh holds $STATE/.lock"
    do_down || die "down: something survived (see above)"
    ;;
  status) cmd_status ;;
  exec) cmd_exec ;;
  kill-raylet) cmd_kill_raylet ;;
  kill-node) cmd_kill_node ;;
  pids) cmd_pids ;;
esac
