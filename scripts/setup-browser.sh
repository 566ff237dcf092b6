#!/usr/bin/env bash
# Installs Debian's Chromium and its ChromeDriver (for the HTML waterfall tests), idempotently; prints
# Chromium's path.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  echo /usr/bin/chromium
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "setup-browser: installing chromium from Debian's packages (one time)" >&2
$SUDO apt-get update -q >&2
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends chromium chromium-driver >&2
echo /usr/bin/chromium
