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

if [ -x "$VENV/bin/python" ] && [ -f "$VENV/.ravel-ok" ] && [ "$(cat "$VENV/.ravel-ok")" = "$WANT" ]; then
  echo "$VENV"
  exit 0
fi

PY=""
for c in python3.11 python3; do
  if command -v "$c" >/dev/null 2>&1; then
    v=$("$c" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    if [ "$v" = "3.11" ]; then PY="$c"; break; fi
  fi
done
[ -n "$PY" ] || { echo "setup-openai-client: needs Python 3.11; none found" >&2; exit 1; }

echo "setup-openai-client: installing openai==$OPENAI_VERSION and pytest==$PYTEST_VERSION into $VENV (one time)" >&2
mkdir -p "$(dirname "$VENV")"
rm -f "$VENV/.ravel-ok"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip >&2
printf '%s\n' "$WANT" > "$VENV/.ravel-requirements.txt"
"$VENV/bin/python" -m pip install -q -r "$VENV/.ravel-requirements.txt" >&2
"$VENV/bin/python" -c 'import openai, pytest; print("openai", openai.__version__, "pytest", pytest.__version__)' >&2
printf '%s' "$WANT" > "$VENV/.ravel-ok"
echo "$VENV"
