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
# pip, quietly; this machine's pip config names local indexes that may be absent, and pip
# warns about each of them per package — drop those lines, keep everything else.
quiet_pip() {
  local log status=0
  log="$(mktemp)"
  "$root/.venv/bin/python" -m pip "$@" >"$log" 2>&1 || status=$?
  grep -v "is ignored: it is neither a file nor a directory" "$log" >&2 || true
  rm -f "$log"
  return "$status"
}
if [ ! -x "$root/.venv/bin/python" ]; then
  echo "setting up .venv with $python_bin (first time: a few minutes)" >&2
  "$python_bin" -m venv "$root/.venv"
  quiet_pip install -q --upgrade pip
fi
stamp="$root/.venv/.installed-$(cat "$root/pyproject.toml" | sha256sum | cut -c1-16)-${extras//,/_}"
if [ ! -f "$stamp" ]; then
  spec="$root"
  [ -n "$extras" ] && spec="$root[$extras]"
  echo "installing samza-dagster${extras:+[$extras]} into .venv" >&2
  quiet_pip install -q -e "$spec"
  touch "$stamp"
fi
export PATH="$root/.venv/bin:$PATH"
export VIRTUAL_ENV="$root/.venv"
