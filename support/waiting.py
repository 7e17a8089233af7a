"""Waiting on a condition with a deadline: what tests and benchmarks do instead of sleeping.

A fixed ``time.sleep`` is either too short on a loaded machine (a flaky test) or longer than
needed everywhere else (a slow suite); a condition polled until a deadline is neither.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T], timeout_s: float = 60.0, what: str = "the condition", poll_s: float = 0.02
) -> T:
    """Call ``condition`` until it returns something truthy and return that; TimeoutError naming
    ``what`` (and the last value seen) after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout_s:.0f}s for {what} (last: {result!r})")
        time.sleep(poll_s)
