#!/usr/bin/env bash
# Builds and runs examples/java-app (an application of its own that uses Ravel from the local Maven repository)
# against this checkout: installs Ravel's artifacts (mvn install, tests skipped: scripts/test-all.sh runs them
# before), then the example's own tests, which run its Java -> Python -> Java pipeline on a Ray head of their own
# and check its trace. Part of the test command (scripts/test-all.sh).
#
#   scripts/example-java-app.sh [RAY_VENV]    RAY_VENV: the Ray virtualenv (default: RAVEL_RAY_VENV, else setup-ray.sh's)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-${RAVEL_RAY_VENV:-}}"
if [[ -z "$VENV" ]]; then
  VENV="$(RAVEL_PYTHON_WORKERS=1 "$ROOT/scripts/setup-ray.sh" | tail -n 1)"
fi
JAR="$(ls "$VENV"/lib/python3*/site-packages/ray/jars/ray_dist.jar 2>/dev/null | head -n 1 || true)"
if [[ -z "$JAR" || ! -f "$JAR" ]]; then
  echo "example-java-app: no Ray jar at $JAR (run scripts/setup-ray.sh)" >&2
  exit 1
fi
(cd "$ROOT" && mvn -B -q ${MAVEN_ARGS:-} install -DskipTests)
mvn -B ${MAVEN_ARGS:-} -f "$ROOT/examples/java-app/pom.xml" -Dravel.home="$ROOT" -Dravel.ray.venv="$VENV" \
  -Dravel.ray.jar="$JAR" verify
