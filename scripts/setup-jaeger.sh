#!/usr/bin/env bash
# Builds Jaeger v2 (the all-in-one binary, an OTLP backend with search by attribute) from the Go module
# proxy, idempotently, and prints the binary's path. Pinned: github.com/jaegertracing/jaeger v1.76.0 (the
# Go module version of a Jaeger v2 release; the module proxy serves it, built as a tool of a scratch
# module so the upstream replace directives do not apply). Override the location with RAVEL_JAEGER_HOME.
set -euo pipefail
JAEGER_VERSION=v1.76.0
HOME_DIR="${RAVEL_JAEGER_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/ravel/jaeger-$JAEGER_VERSION}"
BIN="$HOME_DIR/bin/jaeger"
if [ -x "$BIN" ]; then
  echo "$BIN"
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo "setup-jaeger: Go is needed to build Jaeger" >&2; exit 1; }
echo "setup-jaeger: building Jaeger $JAEGER_VERSION (one time, several minutes)" >&2
mkdir -p "$HOME_DIR/src" "$HOME_DIR/bin"
cd "$HOME_DIR/src"
[ -f go.mod ] || go mod init ravel.local/jaeger-build >&2
go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$JAEGER_VERSION" >&2
go build -o "$BIN.tmp" github.com/jaegertracing/jaeger/cmd/jaeger >&2
mv "$BIN.tmp" "$BIN"
echo "$BIN"
