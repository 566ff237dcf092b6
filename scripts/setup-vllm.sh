#!/usr/bin/env bash
# Installs vLLM (pinned) and pytest into a project-local Python 3.12 virtualenv, idempotently, and prints the
# virtualenv's path as the last line of stdout (logs go to stderr). vLLM cannot serve without a GPU here, but its
# Python code imports and runs on a CPU: the contract test (integration-tests/src/test/python/test_vllm_contract.py)
# builds vLLM's own API app with a stand-in engine and checks what Ravel's client sends and what `ravel serve`
# answers against vLLM's own request models, routes and renderers. About 9.5 GB installed (PyTorch with its CUDA
# libraries comes with it), a few minutes the first time. Override the location with RAVEL_VLLM_VENV.
set -euo pipefail
VLLM_VERSION=0.33.0
PYTEST_VERSION=9.2.0
VENV="${RAVEL_VLLM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ravel/vllm-${VLLM_VERSION}-py312}"
WANT="$(printf 'vllm==%s\npytest==%s\n' "$VLLM_VERSION" "$PYTEST_VERSION")"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/venv-lib.sh"

if ravel_venv_ready "$VENV" "$WANT" python; then
  echo "$VENV"
  exit 0
fi
# vLLM 0.33 wants Python 3.12; pyenv may have one that is not on its global list
if ! python3.12 -c '' >/dev/null 2>&1 && command -v pyenv >/dev/null 2>&1; then
  for d in "$(pyenv root)"/versions/3.12*/bin; do
    [ -x "$d/python3.12" ] && { PATH="$d:$PATH"; break; }
  done
fi
ravel_install_venv setup-vllm "$VENV" "$WANT" "3.12" \
  'VLLM_TARGET_DEVICE=cpu python -c "import vllm, pytest; print(\"vllm\", vllm.__version__, \"pytest\", pytest.__version__)"'
