"""Writing benchmark results into docs/benchmarks.md.

Each benchmark owns one section between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``
markers; re-running it replaces only that section, so benchmarks can run separately.
"""

from __future__ import annotations

import os
import platform
import re
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

BENCHMARKS_MD = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
_HEADER = "# Benchmarks\n\nEvery number below was measured on this project's 2-core machine; each section says the command that produced it.\n"


def machine_line() -> str:
    cpus = os.cpu_count()
    return f"Python {platform.python_version()} on {platform.system()} {platform.machine()}, {cpus} CPUs"


def summarize(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, min, max)."""
    return statistics.median(values), min(values), max(values)


def fmt_rate(values: Sequence[float]) -> str:
    med, lo, hi = summarize(values)
    return f"{med:,.0f} ({lo:,.0f}–{hi:,.0f})"


def write_section(name: str, markdown: str, path: Path = BENCHMARKS_MD) -> None:
    """Replace (or append) the section called ``name`` in docs/benchmarks.md."""
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{start}\n{markdown.strip()}\n{end}\n"
    text = path.read_text() if path.exists() else _HEADER
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end) + r"\n?", re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _m: block, text)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def command_line(module: str) -> str:
    """The command that reproduces this run, e.g. ``python -m bench.bench_log_system --messages 1000000``."""
    return " ".join(["python -m", module, *sys.argv[1:]])
