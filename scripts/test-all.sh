#!/usr/bin/env bash
# Runs every test: unit tests (Surefire), then integration tests (Failsafe) that start what they need on
# loopback: a real Ray head, a real Jaeger v2, a real headless Chromium. Installs those first, idempotently:
# the default Ray (RAVEL_RAY_VERSION, default the newest the tests pass on) and the compat Ray (2.39.0, what
# Maven Central's io.ray jars match) in project-local virtualenvs, Jaeger built from the Go module proxy,
# Debian's Chromium, and the official OpenAI Python client (pinned, in its own virtualenv); PyTorch,
# transformers and the OpenTelemetry Python SDK go into the default Ray's virtualenv for Ravel's Python workers,
# whose pytest suite runs first. Every integration test runs on the default Ray; a smoke set also runs on the
# compat Ray.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
COMPAT_RAY_VERSION=2.39.0
# the virtualenvs are chosen by version here, never by an inherited RAVEL_RAY_VENV
unset RAVEL_RAY_VENV RAVEL_RAY_JAR
RAY_VERSION="${RAVEL_RAY_VERSION:-$(sed -n 's/^DEFAULT_RAY_VERSION=//p' "$ROOT/scripts/setup-ray.sh")}"
# the Python workers' dependencies (PyTorch, ...) go into the default Ray's virtualenv only, whatever is exported
RAY_VENV="$(RAVEL_PYTHON_WORKERS=1 RAVEL_RAY_VERSION="$RAY_VERSION" "$ROOT/scripts/setup-ray.sh")"
COMPAT_VENV="$(RAVEL_PYTHON_WORKERS=0 RAVEL_RAY_VERSION="$COMPAT_RAY_VERSION" "$ROOT/scripts/setup-ray.sh")"
ray_jar() { ls "$1"/lib/python*/site-packages/ray/jars/ray_dist.jar | head -n 1; }
RAVEL_JAEGER_BIN="$("$ROOT/scripts/setup-jaeger.sh")"
RAVEL_CHROMIUM="$("$ROOT/scripts/setup-browser.sh")"
export RAVEL_JAEGER_BIN RAVEL_CHROMIUM
OPENAI_VENV="$("$ROOT/scripts/setup-openai-client.sh" | tail -n 1)"
# Ravel's Python workers: their pytest suite, with the Ray virtualenv's interpreter (which has their dependencies)
(cd "$ROOT/workers/src/main/python" && "$RAY_VENV/bin/python" -m pytest -q -p no:cacheprovider tests)
exec mvn -B ${MAVEN_ARGS:-} \
  -Dravel.ray.version="$RAY_VERSION" -Dravel.ray.venv="$RAY_VENV" -Dravel.ray.jar="$(ray_jar "$RAY_VENV")" \
  -Dravel.ray.compat.version="$COMPAT_RAY_VERSION" -Dravel.ray.compat.venv="$COMPAT_VENV" \
  -Dravel.ray.compat.jar="$(ray_jar "$COMPAT_VENV")" \
  -Dravel.openai.venv="$OPENAI_VENV" \
  verify
