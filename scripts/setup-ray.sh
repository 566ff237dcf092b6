#!/usr/bin/env bash
# Installs ray[default]==$RAVEL_RAY_VERSION (default: the newest Ray the project's tests pass on) into a
# project-local virtualenv, idempotently, and prints the virtualenv's path. The driver and the Java workers
# run on that Ray's own ray/jars/ray_dist.jar; the io.ray jars from Maven Central (2.39.0, the newest it
# serves) are used only to compile. Override the location with RAVEL_RAY_VENV.
# The dependencies of Ravel's Python workers (PyTorch, transformers, the OpenTelemetry Python SDK, TensorBoard's
# writer for telemetry.trackers;
# workers/src/main/python/requirements.txt) go into the same virtualenv, since Ray runs Python actors with the
# interpreter of the virtualenv that started it: for the default Ray version unless RAVEL_PYTHON_WORKERS=0,
# for another one only with RAVEL_PYTHON_WORKERS=1.
set -euo pipefail
DEFAULT_RAY_VERSION=2.60.0
RAY_VERSION="${RAVEL_RAY_VERSION:-$DEFAULT_RAY_VERSION}"
case "$RAY_VERSION" in
  [0-9]*.[0-9]*.[0-9]*) ;;
  *) echo "setup-ray: RAVEL_RAY_VERSION must be a Ray release such as $DEFAULT_RAY_VERSION, got '$RAY_VERSION'" >&2; exit 1 ;;
esac
VENV="${RAVEL_RAY_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ravel/ray-${RAY_VERSION}-py311}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# what is installed: Ray itself plus the project's extra pins, compared with the marker of a finished install
# by default only with the default Ray, which the Python workers' tests run on
if [ "$RAY_VERSION" = "$DEFAULT_RAY_VERSION" ]; then PYTHON_WORKERS="${RAVEL_PYTHON_WORKERS:-1}"; else PYTHON_WORKERS="${RAVEL_PYTHON_WORKERS:-0}"; fi
WORKER_REQUIREMENTS="$HERE/../workers/src/main/python/requirements.txt"
WANT="$(printf 'ray[default]==%s\n' "$RAY_VERSION"; cat "$HERE/ray-requirements.txt"
  if [ "$PYTHON_WORKERS" != 0 ]; then cat "$WORKER_REQUIREMENTS"; fi)"
CHECK='ray --version && test -f "$(dirname "$(dirname "$(command -v ray)")")"/lib/python*/site-packages/ray/jars/ray_dist.jar'
if [ "$PYTHON_WORKERS" != 0 ]; then
  CHECK="$CHECK"' && python -c "import torch, transformers, opentelemetry.sdk, tensorboard; print(\"torch\", torch.__version__, \"transformers\", transformers.__version__, \"tensorboard\", tensorboard.__version__)"'
fi

. "$HERE/venv-lib.sh"

if ravel_venv_ready "$VENV" "$WANT" ray; then
  echo "$VENV"
  exit 0
fi
# a virtualenv named explicitly, with no version asked for, is used with whatever Ray it holds: never
# reinstall over a user's (or another Ray version's) virtualenv
if [ -n "${RAVEL_RAY_VENV:-}" ] && [ -z "${RAVEL_RAY_VERSION:-}" ] && [ -x "$VENV/bin/ray" ] && [ -f "$VENV/.ravel-ok" ]; then
  echo "$VENV"
  exit 0
fi

# the Python workers need Python 3.10 or later
if [ "$PYTHON_WORKERS" != 0 ]; then PYTHONS="3.10 3.11 3.12"; else PYTHONS="3.9 3.10 3.11 3.12"; fi
ravel_install_venv setup-ray "$VENV" "$WANT" "$PYTHONS" "$CHECK"
