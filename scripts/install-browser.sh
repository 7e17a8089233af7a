#!/usr/bin/env bash
# Installs Debian's headless Chromium for the UI test (tests/orchestration/test_ui_dagster.py), which drives it
# with the PyPI `playwright` package through executable_path=/usr/bin/chromium.
# Never `playwright install`: it downloads its own browser builds; Debian's package is what CI has.
# Idempotent: does nothing when /usr/bin/chromium already exists (~40 s otherwise).
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
    echo "chromium already installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium chromium-driver
/usr/bin/chromium --version
