#!/usr/bin/env bash
# Runs every test: unit tests (Surefire), then integration tests (Failsafe) that start what they need on
# loopback: a real Ray head, a real Jaeger v2, a real headless Chromium. Installs those first, idempotently
# (Ray 2.39.0 in a project-local virtualenv, Jaeger built from the Go module proxy, Debian's Chromium).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RAVEL_RAY_VENV="$("$ROOT/scripts/setup-ray.sh")"
RAVEL_JAEGER_BIN="$("$ROOT/scripts/setup-jaeger.sh")"
RAVEL_CHROMIUM="$("$ROOT/scripts/setup-browser.sh")"
export RAVEL_RAY_VENV RAVEL_JAEGER_BIN RAVEL_CHROMIUM
exec mvn -B ${MAVEN_ARGS:-} verify
