#!/usr/bin/env bash
# Installs ray[default]==$RAVEL_RAY_VERSION (default: the newest Ray the project's tests pass on) into a
# project-local virtualenv, idempotently, and prints the virtualenv's path. The driver and the Java workers
# run on that Ray's own ray/jars/ray_dist.jar; the io.ray jars from Maven Central (2.39.0, the newest it
# serves) are used only to compile. Override the location with RAVEL_RAY_VENV.
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
WANT="$(printf 'ray[default]==%s\n' "$RAY_VERSION"; cat "$HERE/ray-requirements.txt")"

if [ -x "$VENV/bin/ray" ] && [ -f "$VENV/.ravel-ok" ] && [ "$(cat "$VENV/.ravel-ok")" = "$WANT" ]; then
  echo "$VENV"
  exit 0
fi
# a virtualenv named explicitly, with no version asked for, is used with whatever Ray it holds: never
# reinstall over a user's (or another Ray version's) virtualenv
if [ -n "${RAVEL_RAY_VENV:-}" ] && [ -z "${RAVEL_RAY_VERSION:-}" ] && [ -x "$VENV/bin/ray" ] && [ -f "$VENV/.ravel-ok" ]; then
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
rm -f "$VENV/.ravel-ok"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip >&2
printf '%s\n' "$WANT" > "$VENV/.ravel-requirements.txt"
"$VENV/bin/python" -m pip install -q -r "$VENV/.ravel-requirements.txt" >&2
"$VENV/bin/ray" --version >&2
test -f "$VENV/lib/"python*/site-packages/ray/jars/ray_dist.jar
printf '%s' "$WANT" > "$VENV/.ravel-ok"
echo "$VENV"
