#!/usr/bin/env bash
# Checks recorded exchanges between Ravel's client and `ravel serve` against vLLM's own code: every request is
# accepted by vLLM's app and means the same to it, every answer has the shape vLLM's renderers give, the weight
# update routes come in vLLM's order. Installs vLLM (scripts/setup-vllm.sh, idempotent) first.
#
#   scripts/check-vllm-contract.sh runs/<run-id>/inference-server-exchanges-*.jsonl
#
# Record the exchanges with `generation.record_exchanges: true` (launched servers) or `ravel serve
# --record-exchanges FILE`. Exits with pytest's status.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ "$#" -ge 1 ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
for f in "$@"; do
  [ -s "$f" ] || { echo "check-vllm-contract: $f: no such file, or empty" >&2; exit 2; }
done
VENV="$("$ROOT/scripts/setup-vllm.sh" | tail -n 1)"
RAVEL_EXCHANGES="$(IFS=:; echo "$*")" VLLM_TARGET_DEVICE=cpu \
  exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider -s \
  "$ROOT/integration-tests/src/test/python/test_vllm_contract.py"
