#!/usr/bin/env bash
# Creates (or reuses) the project's virtual environment in .venv and installs the project
# into it with the given extras. Re-installs only when pyproject.toml changed.
# Usage: source scripts/setup-venv.sh "test"   (extras, comma-separated; may be empty)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
extras="${1:-}"
python_bin="${PYTHON:-}"
if [ -z "$python_bin" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then python_bin="$candidate"; break; fi
  done
fi
if [ ! -x "$root/.venv/bin/python" ]; then
  echo "setting up .venv with $python_bin (first time: a few minutes)" >&2
  "$python_bin" -m venv "$root/.venv"
  "$root/.venv/bin/python" -m pip install -q --upgrade pip >&2
fi
stamp="$root/.venv/.installed-$(cat "$root/pyproject.toml" | sha256sum | cut -c1-16)-${extras//,/_}"
if [ ! -f "$stamp" ]; then
  spec="$root"
  [ -n "$extras" ] && spec="$root[$extras]"
  echo "installing samza-dagster${extras:+[$extras]} into .venv" >&2
  "$root/.venv/bin/python" -m pip install -q -e "$spec" >&2
  rm -f "$root"/.venv/.installed-*
  touch "$stamp"
fi
export PATH="$root/.venv/bin:$PATH"
export VIRTUAL_ENV="$root/.venv"
