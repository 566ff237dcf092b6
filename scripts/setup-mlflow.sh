#!/usr/bin/env bash
# Installs MLflow (its tracking server) and TensorBoard (its event-file reader) at pinned versions into a
# project-local Python 3.11 virtualenv, idempotently, and prints the virtualenv's path as the last line of stdout
# (logs go to stderr). The integration test TrackersIT starts `mlflow server` on 127.0.0.1 from it, and reads a
# run's TensorBoard event files back with TensorBoard's own EventAccumulator. Override the location with
# RAVEL_MLFLOW_VENV.
set -euo pipefail
MLFLOW_VERSION=3.17.2
TENSORBOARD_VERSION=2.21.0
VENV="${RAVEL_MLFLOW_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ravel/mlflow-py311}"
# what is installed, compared with the marker of a finished install
WANT="$(printf 'mlflow==%s\ntensorboard==%s\n' "$MLFLOW_VERSION" "$TENSORBOARD_VERSION")"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/venv-lib.sh"

if ravel_venv_ready "$VENV" "$WANT" mlflow; then
  echo "$VENV"
  exit 0
fi
ravel_install_venv setup-mlflow "$VENV" "$WANT" "3.11" \
  'mlflow --version && python -c "import tensorboard; print(\"tensorboard\", tensorboard.__version__)"'
