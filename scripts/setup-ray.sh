#!/usr/bin/env bash
# Installs ray[default]==2.39.0 (matching the io.ray 2.39.0 Java jars) into a project-local virtualenv,
# idempotently. Prints the virtualenv's path. Override the location with RAVEL_RAY_VENV.
set -euo pipefail
RAY_VERSION=2.39.0
VENV="${RAVEL_RAY_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ravel/ray-${RAY_VERSION}-py311}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REQS="$HERE/ray-requirements.txt"

if [ -x "$VENV/bin/ray" ] && [ -f "$VENV/.ravel-ok" ] && cmp -s "$REQS" "$VENV/.ravel-ok"; then
  echo "$VENV"
  exit 0
fi

PY=""
for c in python3.11 python3.12 python3.10 python3; do
  if command -v "$c" >/dev/null 2>&1; then
    v=$("$c" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    case "$v" in 3.9|3.10|3.11|3.12) PY="$c"; break ;; esac
  fi
done
[ -n "$PY" ] || { echo "setup-ray: Ray $RAY_VERSION needs Python 3.9-3.12; none found" >&2; exit 1; }

echo "setup-ray: installing ray[default]==$RAY_VERSION into $VENV (one time, a few minutes)" >&2
mkdir -p "$(dirname "$VENV")"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip >&2
"$VENV/bin/python" -m pip install -q -r "$REQS" >&2
"$VENV/bin/ray" --version >&2
test -f "$VENV/lib/"python*/site-packages/ray/jars/ray_dist.jar
cp "$REQS" "$VENV/.ravel-ok"
echo "$VENV"
