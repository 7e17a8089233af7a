"""Shared pieces of the benchmark runner: isolated measurements, results, the environment.

Every measurement of the runner (candidate or baseline, one repetition) runs in a child process
(``python -m bench.harness MODULE:FUNCTION JSON``) so that

* its peak RSS is its own (the kernel's high-water mark of the process, ``VmHWM``), and
* the CPU time it used (user + system of all its threads) gives "cores used" for B3;

the function returns a JSON-able dict; the child adds ``peak_rss_mb`` and ``cpu_s`` and prints
it as the last line of stdout. All children belong to the runner's process tree.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
_RESULT_PREFIX = "BENCH-RESULT "


class MeasurementError(RuntimeError):
    """A measurement's child process failed; carries its output tail."""


def isolated(target: str, timeout_s: float = 900.0, **kwargs: Any) -> dict[str, Any]:
    """Run ``target`` ("module:function") with ``kwargs`` in a fresh interpreter."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "bench.harness", target, json.dumps(kwargs)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    for line in reversed(proc.stdout.splitlines() + proc.stderr.splitlines()):
        # anywhere in the line, on either stream: peers that take over stdout (Faust routes it
        # through its logging, to stderr) prefix it with a timestamp and level
        at = line.find(_RESULT_PREFIX)
        if at >= 0:
            if proc.returncode != 0:
                break
            return json.loads(line[at + len(_RESULT_PREFIX) :])
    raise MeasurementError(
        f"{target}({kwargs}) exited with {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    )


def _child_main(target: str, raw_kwargs: str) -> None:
    module_name, func_name = target.split(":")
    func: Callable[..., dict[str, Any]] = getattr(import_module(module_name), func_name)
    result = dict(func(**json.loads(raw_kwargs)))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result.setdefault("peak_rss_mb", peak_rss_mb())
    result.setdefault("cpu_s", usage.ru_utime + usage.ru_stime)
    sys.stdout.flush()
    print(_RESULT_PREFIX + json.dumps(result), flush=True)


def emit_and_exit(result: dict[str, Any]) -> None:
    """Report ``result`` as the child's answer and end the process now (for peers, such as
    Faust, that cannot be stopped cleanly from inside)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result = dict(result, peak_rss_mb=peak_rss_mb(), cpu_s=usage.ru_utime + usage.ru_stime)
    sys.stdout.flush()
    print(_RESULT_PREFIX + json.dumps(result), flush=True)
    os._exit(0)


def peak_rss_mb() -> float:
    """This process's peak resident set, MB. Not ``getrusage``'s ``ru_maxrss``: that survives
    ``exec`` and so starts at the RSS of the parent at ``fork`` — a runner that had loaded 1M
    Kafka messages in-process made every child report its 170 MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    usage = resource.getrusage(resource.RUSAGE_SELF)  # not Linux: the best there is
    return usage.ru_maxrss / 1024.0


def cpu_seconds() -> float:
    """CPU time of this process so far (all threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of another process, e.g. the broker, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


# -- results ------------------------------------------------------------------------------------
@dataclass
class Section:
    """One benchmark's outcome: its markdown and its verdict against the issue's target."""

    key: str  # "B1"
    title: str
    command: str
    body: str
    result: str  # one line for the summary table
    target: str
    met: bool | None  # None: not measured (e.g. a peer is missing)
    why: str = ""
    elapsed_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        verdict = {True: "**met**", False: "**not met**", None: "**not measured**"}[self.met]
        parts = [
            f"## {self.key}: {self.title}",
            "",
            f"Command: `{self.command}` (this section alone); the whole set: `python -m bench`.",
            "",
            self.body.strip(),
            "",
            f"Target: {self.target} — {verdict}. {self.why}".rstrip(),
            "",
            f"Section wall time: {self.elapsed_s:.0f} s.",
        ]
        return "\n".join(parts)


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def fmt(values: Sequence[float], spec: str = ",.0f") -> str:
    """``median (min–max)``."""
    return f"{median(values):{spec}} ({min(values):{spec}}–{max(values):{spec}})"


def alternate(
    repetitions: int, measurements: dict[str, Callable[[int], dict[str, Any]]], log: Callable[[str], None] = print
) -> dict[str, list[dict[str, Any]]]:
    """Run each measurement once per repetition, alternating them (A B A B ...), so that a
    change of load on the shared machine hits candidates and baselines alike. Each result gets
    ``load_1min``, the load average as its run started."""
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in measurements}
    for rep in range(repetitions):
        for name, run in measurements.items():
            load = os.getloadavg()[0]  # the machine's 1-minute load average as the run starts
            result = run(rep)
            result.setdefault("load_1min", load)
            out[name].append(result)
            shown = {
                k: (round(v, 3) if isinstance(v, float) else v)
                for k, v in result.items()
                if not isinstance(v, (list, dict))
            }
            log(f"  rep {rep} {name}: {shown}")
    return out


def column(results: list[dict[str, Any]], name: str) -> list[float]:
    return [float(r[name]) for r in results]


# -- environment ----------------------------------------------------------------------------------
def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def versions(packages: Sequence[str]) -> str:
    found = []
    for name in packages:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{os.cpu_count()} CPUs ({cpu}), {mem_gb:.0f} GiB RAM, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def timed(func: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    value = func()
    return value, time.perf_counter() - t0


if __name__ == "__main__":
    _child_main(sys.argv[1], sys.argv[2])
