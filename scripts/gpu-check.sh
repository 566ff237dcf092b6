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
#
# The real-vLLM mode (python -m ravel_checks.gpu_check_vllm):
#
#   scripts/gpu-check.sh --vllm VLLM_COMMAND [--device cuda|cuda:N|cpu] [gpu_check_vllm options...]
#
# starts ONE `vllm serve` of a tied-embedding fixture model (made on disk; or --model DIR) with Ravel's
# `ravel-file` weight-transfer backend, runs a few GRPO steps (samples and their log-probs from vLLM over HTTP,
# Ravel's Python trainer on the device, the weights published as a safetensors file and loaded through vLLM's
# routes), checks after every refit that the server's log-prob for a fixed prompt equals transformers' on the
# trainer's weights, prints reward and tokens/s per step and one JSON summary, stops the server by its PID and
# exits non-zero if a check failed. VLLM_COMMAND is the `vllm` executable (or a quoted command line); Ravel's
# plugin must be installed where it runs (pip install workers/src/main/vllm-plugin). PYTHON defaults to the
# `python` beside that executable (vLLM's environment has everything the check imports), else python3; the
# run is bounded by GPU_CHECK_TIMEOUT seconds (default 580). There is no NCCL transport: on CUDA too the
# weights move as a file. Options: --dtype, --model, --steps, --prompts, --group-size, --lr, --atol,
# --serve-args, --work-dir, --max-seconds (python -m ravel_checks.gpu_check_vllm --help).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PACKAGE_DIR="$ROOT/workers/src/main/python"
PYTHON="${PYTHON:-}"

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
  PYTHON="${PYTHON:-python3}"
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
VLLM=""
ARGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --vllm) [[ $# -ge 2 && -n "$2" ]] || die "--vllm needs the vllm command"; VLLM="$2"; shift 2 ;;
    --download-wheels) [[ $# -ge 2 ]] || die "--download-wheels needs a folder"; download "$2"; exit 0 ;;
    --wheels) [[ $# -ge 2 ]] || die "--wheels needs a folder"; WHEEL_DIR="$2"; shift 2 ;;
    --device) [[ $# -ge 2 ]] || die "--device needs cpu or cuda"; DEVICE="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    # the check runs in the package's folder (a folder named like a package in the caller's, /tmp/ray for one,
    # would shadow it): folders given to it are made absolute here
    --model|--work-dir|--runs-dir)
      [[ $# -ge 2 ]] || die "$1 needs a folder"; ARGS+=("$1" "$(realpath -m -- "$2")"); shift 2 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
[[ "$DEVICE" == cpu || "$DEVICE" == cuda || "$DEVICE" == cuda:* ]] || die "--device must be cpu or cuda, got $DEVICE"

MODULE=ravel_checks.gpu_check
TIMEOUT="${GPU_CHECK_TIMEOUT:-300}"
if [[ -n "$VLLM" ]]; then
  VLLM="${VLLM#"${VLLM%%[![:space:]]*}"}"
  read -r -a VLLM_WORDS <<<"$VLLM"
  VLLM_EXE="$(command -v "${VLLM_WORDS[0]}" || true)"
  [[ -n "$VLLM_EXE" ]] || die "--vllm: '${VLLM_WORDS[0]}' is not an executable"
  if [[ "$VLLM_EXE" == */* ]]; then  # a path: made absolute for the package's folder, the rest kept as given
    VLLM_EXE="$(cd "$(dirname "$VLLM_EXE")" && pwd)/$(basename "$VLLM_EXE")"
    VLLM="$(printf '%q' "$VLLM_EXE")${VLLM:${#VLLM_WORDS[0]}}"
  fi
  # vLLM's own environment has torch, transformers and OpenTelemetry: the check runs there unless PYTHON says
  if [[ -z "$PYTHON" && -x "$(dirname "$VLLM_EXE")/python" ]]; then
    PYTHON="$(dirname "$VLLM_EXE")/python"
  fi
  MODULE=ravel_checks.gpu_check_vllm
  TIMEOUT="${GPU_CHECK_TIMEOUT:-580}"
  ARGS=(--vllm "$VLLM" ${ARGS[@]+"${ARGS[@]}"})
fi
PYTHON="${PYTHON:-python3}"

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
# the check stops what it started when signalled (the vllm server by its PID); -k: a last resort 150 s later
timeout -k 150 "$TIMEOUT" "$PYTHON" -m "$MODULE" --device "$DEVICE" ${ARGS[@]+"${ARGS[@]}"} || status=$?
[[ $status -eq 124 ]] && echo "gpu-check: timed out after ${TIMEOUT}s" >&2
exit $status
