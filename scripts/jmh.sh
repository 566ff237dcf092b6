#!/usr/bin/env bash
# JMH micro-benchmarks (not part of the tests): Ravel's span helper and context carrier against the bare
# OpenTelemetry SDK in one JVM run, with the ratios printed at the end. JMH's options pass through, e.g.
#   scripts/jmh.sh -f 2 -wi 5 -i 10          (forks, warm-up and measured iterations)
#   scripts/jmh.sh -rf json -rff jmh.json    (JMH's own JSON result file as well)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
mvn -B -q -pl telemetry-core,benchmarks -am package -DskipTests ${MAVEN_ARGS:-}
exec "${JAVA_HOME:+$JAVA_HOME/bin/}java" -cp "benchmarks/target/benchmarks-0.1.0-SNAPSHOT.jar:benchmarks/target/lib/*" \
  dev.ravel.benchmarks.Ratios "$@"
