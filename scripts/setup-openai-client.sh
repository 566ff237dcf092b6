#!/usr/bin/env bash
# Installs the official OpenAI Python client (and pytest) at pinned versions into a project-local Python 3.11
# virtualenv, idempotently, and prints the virtualenv's path as the last line of stdout (logs go to stderr).
# The integration test OpenAiClientIT runs its pytest file with that virtualenv against `ravel serve`.
# Override the location with RAVEL_OPENAI_VENV.
set -euo pipefail
OPENAI_VERSION=3.57.0
PYTEST_VERSION=9.2.0
VENV="${RAVEL_OPENAI_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ravel/openai-client-py311}"
# what is installed, compared with the marker of a finished install
WANT="$(printf 'openai==%s\npytest==%s\n' "$OPENAI_VERSION" "$PYTEST_VERSION")"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/venv-lib.sh"

if ravel_venv_ready "$VENV" "$WANT" python; then
  echo "$VENV"
  exit 0
fi
ravel_install_venv setup-openai-client "$VENV" "$WANT" "3.11" \
  'python -c "import openai, pytest; print(\"openai\", openai.__version__, \"pytest\", pytest.__version__)"'
