#!/usr/bin/env bash
# Checks Ravel's Python workers on one NVIDIA GPU, outside Ray: the generation worker and GRPO training steps
# on CUDA with spans written to a JSONL file; prints tokens/s and step times (python -m ravel_checks.gpu_check).
#
# The machine needs Python with PyTorch and transformers; no network, Java or Ray. The OpenTelemetry wheels it
# needs beyond those come from a folder (pure-Python wheels, a few MiB), fetched beforehand where there is
# network:
#
#   scripts/gpu-check.sh --download-wheels DIR          pip download --no-deps of exactly the pinned wheels
#   scripts/gpu-check.sh [--wheels DIR] [--device cpu|cuda] [gpu_check options...]
#
# Without --wheels the Python environment must already have the OpenTelemetry SDK. Other options go to
# ravel_checks.gpu_check (--hidden, --layers, --heads, --prompts, --steps, --lr, --runs-dir, --max-seconds).
# PYTHON picks the interpreter (default python3). The run is bounded by GPU_CHECK_TIMEOUT seconds (default 300).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PACKAGE_DIR="$ROOT/workers/src/main/python"
PYTHON="${PYTHON:-python3}"

# The pure-Python wheels ravel_workers imports beyond torch and transformers (which bring typing-extensions),
# at the versions of workers/src/main/python/requirements.txt and what they pin in turn. The file exporter
# needs no OTLP exporter package, only the OTLP protobuf encoders.
WHEELS=(
  "opentelemetry-api==1.45.2"
  "opentelemetry-sdk==1.45.2"
  "opentelemetry-semantic-conventions==0.66b2"
  "opentelemetry-proto==1.45.2"
  "opentelemetry-exporter-otlp-proto-common==1.45.2"
  "protobuf==7.36.2"
)

die() { echo "gpu-check: $*" >&2; exit 2; }

download() {
  local dir="$1"
  mkdir -p "$dir"
  "$PYTHON" -m pip --version >/dev/null 2>&1 || die "--download-wheels needs pip ($PYTHON -m pip); set PYTHON"
  # --platform any: only pure-Python wheels (protobuf's py3-none-any build, not a native one)
  "$PYTHON" -m pip download --no-deps --only-binary=:all: --platform any --implementation py \
    --dest "$dir" "${WHEELS[@]}"
  local n
  n=$(find "$dir" -maxdepth 1 -name '*.whl' | wc -l)
  [[ "$n" -ge "${#WHEELS[@]}" ]] || die "expected ${#WHEELS[@]} wheels in $dir, found $n"
  echo "gpu-check: $n wheels in $dir ($(du -sh "$dir" | cut -f1))"
}

# Unpacks the wheels of $1 into $2: with pip when it works offline, else by unzipping (pure-Python wheels
# are plain zip archives of importable files).
unpack() {
  local dir="$1" target="$2"
  compgen -G "$dir/*.whl" >/dev/null || die "no wheels in $dir (run --download-wheels $dir where there is network)"
  if ! "$PYTHON" -m pip install --quiet --no-index --no-deps --disable-pip-version-check --target "$target" \
      "$dir"/*.whl >/dev/null 2>&1; then
    "$PYTHON" - "$target" "$dir"/*.whl <<'EOF'
import sys, zipfile
target = sys.argv[1]
for wheel in sys.argv[2:]:
    with zipfile.ZipFile(wheel) as z:
        z.extractall(target)
EOF
  fi
}

WHEEL_DIR=""
DEVICE="cuda"
ARGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --download-wheels) [[ $# -ge 2 ]] || die "--download-wheels needs a folder"; download "$2"; exit 0 ;;
    --wheels) [[ $# -ge 2 ]] || die "--wheels needs a folder"; WHEEL_DIR="$2"; shift 2 ;;
    --device) [[ $# -ge 2 ]] || die "--device needs cpu or cuda"; DEVICE="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
[[ "$DEVICE" == cpu || "$DEVICE" == cuda || "$DEVICE" == cuda:* ]] || die "--device must be cpu or cuda, got $DEVICE"

EXTRA_PATH=""
if [[ -n "$WHEEL_DIR" ]]; then
  DEPS="$(mktemp -d "${TMPDIR:-/tmp}/ravel-gpu-check-deps.XXXXXX")"
  trap 'rm -rf "$DEPS"' EXIT
  unpack "$WHEEL_DIR" "$DEPS"
  EXTRA_PATH=":$DEPS"
fi

export PYTHONPATH="$PACKAGE_DIR$EXTRA_PATH${PYTHONPATH:+:$PYTHONPATH}"
export TOKENIZERS_PARALLELISM=false
cd "$PACKAGE_DIR"
status=0
timeout "${GPU_CHECK_TIMEOUT:-300}" "$PYTHON" -m ravel_checks.gpu_check --device "$DEVICE" ${ARGS[@]+"${ARGS[@]}"} \
  || status=$?
[[ $status -eq 124 ]] && echo "gpu-check: timed out after ${GPU_CHECK_TIMEOUT:-300}s" >&2
exit $status
