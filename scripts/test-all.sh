#!/usr/bin/env bash
# Runs every test: unit tests (Surefire) and integration tests (Failsafe) on a real Ray head on loopback.
# Installs what it needs first, idempotently (Ray 2.39.0 in a project-local virtualenv).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RAVEL_RAY_VENV="$("$ROOT/scripts/setup-ray.sh")"
export RAVEL_RAY_VENV
exec mvn -B ${MAVEN_ARGS:-} verify
