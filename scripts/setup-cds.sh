#!/usr/bin/env bash
# usage: scripts/setup-cds.sh RAY_VENV
# Dumps a class-data-sharing archive of the classes that Ray's Java workers load (scripts/cds/ray-java-worker.classlist)
# for the Ray of RAY_VENV and this JDK, idempotently, and prints its path; prints nothing when the JDK cannot dump one
# (a JVM given no archive starts as before). A Java worker started with -XX:SharedArchiveFile=<it> maps those classes
# instead of loading and verifying them: about half a CPU-second less per worker JVM on this machine. The archive's
# name holds a digest of the JDK's version, the class list and the Ray jar's size and time, which the JVM checks too:
# a new JDK, list or Ray gets a new archive.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${1:?usage: scripts/setup-cds.sh RAY_VENV}"
LIST="$ROOT/scripts/cds/ray-java-worker.classlist"
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
JARS="$(ls -d "$VENV"/lib/python*/site-packages/ray/jars 2>/dev/null | head -n 1 || true)"
[ -n "$JARS" ] && [ -f "$JARS/ray_dist.jar" ] || { echo "setup-cds: no ray/jars/ray_dist.jar in $VENV" >&2; exit 2; }
key="$( { "$JAVA" -version 2>&1; cat "$LIST"; stat -c '%s %Y' "$JARS/ray_dist.jar"; } | sha256sum | cut -c1-16)"
ARCHIVE="$VENV/ravel-cds/ray-java-worker-$key.jsa"
if [ ! -s "$ARCHIVE" ]; then
  mkdir -p "$VENV/ravel-cds"
  rm -f "$VENV"/ravel-cds/ray-java-worker-*.jsa
  # the class path exactly as Ray's Java worker command gives it (its jars folder's wildcard), so the JVM finds the
  # archive's class path a prefix of the worker's
  if ! "$JAVA" -Xshare:dump -XX:SharedClassListFile="$LIST" -XX:SharedArchiveFile="$ARCHIVE.tmp" -cp "$JARS/*:" \
      > "$VENV/ravel-cds/dump.log" 2>&1; then
    echo "setup-cds: $JAVA could not dump a class-data-sharing archive (see $VENV/ravel-cds/dump.log); Java workers start without one" >&2
    rm -f "$ARCHIVE.tmp"
    exit 0
  fi
  mv "$ARCHIVE.tmp" "$ARCHIVE"
fi
echo "$ARCHIVE"
