#!/usr/bin/env bash
# Writes scripts/cds/ray-java-worker.classlist: the classes that Ray's Java workers load from the JDK and from Ray's
# jar (Ravel's own come through Ray's code-search-path loader, which a static archive does not hold), as the JVM lists
# them (-XX:DumpLoadedClassList) in every Java worker of one short run of examples/grpo-sync.yaml on a head of its
# own, merged in the order first seen. scripts/setup-cds.sh dumps an archive from it per Ray virtualenv. Run it again
# after a Ray or JDK upgrade (a class the list names and the jar lacks is skipped; one it lacks is loaded as before).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/scripts/cds/ray-java-worker.classlist"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
RAVEL_WORKER_JAVA_OPTS="-XX:DumpLoadedClassList=$WORK/worker-%p.classlist" \
  "$ROOT/bin/ravel" run "$ROOT/examples/grpo-sync.yaml" grpo.steps=2 telemetry.runs_dir="$WORK/runs" > "$WORK/run.log" 2>&1 \
  || { cat "$WORK/run.log" >&2; echo "cds-classlist: the run failed" >&2; exit 1; }
lists=("$WORK"/worker-*.classlist)
[ -e "${lists[0]}" ] || { echo "cds-classlist: no Java worker wrote a class list" >&2; exit 1; }
{
  echo "# The classes that Ray's Java workers load from the JDK and from Ray's jar: ${#lists[@]} workers of a run of"
  echo "# examples/grpo-sync.yaml on $(java -version 2>&1 | head -n 1). Written by scripts/cds-classlist.sh; read by"
  echo "# scripts/setup-cds.sh (-Xshare:dump)."
  grep -hv '^#' "${lists[@]}" | awk '!seen[$0]++'
} > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "$OUT: $(grep -cv '^#' "$OUT") classes from ${#lists[@]} workers" >&2
