"""``samza-dagster --help`` fits one 80×24 screen, gives every command one line, and points at
nothing outside the repository."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from samza_dagster.cli import build_parser
from tests import REPO


def test_help_is_one_screen_with_one_line_per_command():
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "samza_dagster.cli", "--help"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) <= 24 and max(len(line) for line in lines) <= 80, done.stdout
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in commands:
        (line,) = [line for line in lines if re.match(rf"^ +{re.escape(name)} +\S", line)]
        following = lines[lines.index(line) + 1]
        assert not re.match(r"^ {20,}\S", following), f"{name}'s help wraps: {line!r} / {following!r}"
    assert not re.search(r"CONTRACT|DESIGN|seed|\.md\b", done.stdout)
