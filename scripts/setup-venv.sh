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
# pip, with one line per package it fetches so a first install (a few minutes) shows progress;
# the full log stays in .venv/pip.log. This machine's pip config names local indexes that may
# be absent, and pip warns about each of them per package — those lines are dropped.
pip_with_progress() {
  local status=0
  : >"$root/.venv/pip.log"
  "$root/.venv/bin/python" -m pip "$@" >>"$root/.venv/pip.log" 2>&1 &
  local pid=$!
  tail -n +1 -f "$root/.venv/pip.log" --pid="$pid" 2>/dev/null \
    | grep --line-buffered -E "^(Collecting|Installing collected|ERROR|error)" \
    | sed -u -e 's/^Collecting /  fetching /' -e 's/^Installing collected packages: .*/  installing the fetched packages (pyspark is large: a minute or so)/' >&2 || true
  wait "$pid" || status=$?
  if [ "$status" -ne 0 ]; then
    grep -v "is ignored: it is neither a file nor a directory" "$root/.venv/pip.log" | tail -20 >&2
  fi
  return "$status"
}
if [ ! -x "$root/.venv/bin/python" ]; then
  echo "setting up .venv with $python_bin (first time: a few minutes)" >&2
  "$python_bin" -m venv "$root/.venv"
  pip_with_progress install --upgrade pip
fi
stamp="$root/.venv/.installed-$(cat "$root/pyproject.toml" | sha256sum | cut -c1-16)-${extras//,/_}"
if [ ! -f "$stamp" ]; then
  spec="$root"
  [ -n "$extras" ] && spec="$root[$extras]"
  echo "installing samza-dagster${extras:+[$extras]} and its dependencies into .venv" >&2
  pip_with_progress install -e "$spec"
  echo "installed (pip's log: .venv/pip.log)" >&2
  touch "$stamp"
fi
export PATH="$root/.venv/bin:$PATH"
export VIRTUAL_ENV="$root/.venv"
