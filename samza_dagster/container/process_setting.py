"""An interpreter-wide setting that containers change only for as long as one of them runs.

A container tunes two settings of the whole interpreter — the thread switch interval (gil.py) and
the garbage collector's young-generation threshold (gc_threshold.py). The process is not always
the container's own: the thread runner runs several containers in one interpreter, and a Dagster
run worker (or a notebook, or a test) goes on running the user's code after the job. So a
container *holds* the setting while it runs and releases it when it stops:

* the first holder in the process records the value the process had (its *original*);
* while containers hold it, the value in force is the most demanding of what they want and the
  original (``stricter``: the lower switch interval, the higher threshold) — a container never
  relaxes what the process already uses;
* when a holder stops, the value is worked out again from those still running; when the last one
  stops, the original comes back.

Someone else may change the setting while containers hold it (user code, another library): that
value then counts as the original from that moment on, and a last release that finds the setting
no longer at the value the holders put there leaves it as it is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class SettingLease(Generic[T]):
    """One container's hold on a :class:`ProcessSetting`; ``release`` once (later calls do nothing)."""

    __slots__ = ("_setting", "value", "_released")

    def __init__(self, setting: ProcessSetting[T] | None, value: T) -> None:
        self._setting = setting
        #: the value in force when the lease was taken
        self.value = value
        self._released = setting is None

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        assert self._setting is not None
        self._setting._release(self)


class ProcessSetting(Generic[T]):
    """The holders of one interpreter-wide setting (the module docstring)."""

    def __init__(self, read: Callable[[], T], write: Callable[[T], None], stricter: Callable[[T, T], T]) -> None:
        self._read = read
        self._write = write
        self._stricter = stricter
        self._lock = threading.Lock()
        self._wanted: dict[SettingLease[T], T] = {}
        self._original: T | None = None
        #: the value the holders last put in force (None: none holds it)
        self._applied: T | None = None

    def hold(self, wanted: T | None) -> SettingLease[T]:
        """Hold the setting at ``wanted`` or stricter while the lease is not released; ``None``
        asks for nothing (the lease then changes nothing, now or at its release)."""
        if wanted is None:
            return SettingLease(None, self._read())
        with self._lock:
            lease = SettingLease(self, wanted)
            if not self._wanted:
                self._original = self._read()
            self._wanted[lease] = wanted
            lease.value = self._apply_locked()
            return lease

    @property
    def held(self) -> bool:
        with self._lock:
            return bool(self._wanted)

    def _release(self, lease: SettingLease[T]) -> None:
        with self._lock:
            if self._wanted.pop(lease, None) is None:
                return
            if self._wanted:
                self._apply_locked()
                return
            current = self._read()
            # someone changed it since: theirs stays; and a value already the original is not
            # written again (the interpreter keeps the interval in whole µs: 0.0001 s written
            # back as read would come back as 99 µs)
            if current == self._applied and current != self._original:
                assert self._original is not None
                self._write(self._original)
            self._original = self._applied = None

    def _apply_locked(self) -> T:
        current = self._read()
        if self._applied is not None and current != self._applied:
            self._original = current  # changed by someone else while held: the new baseline
        assert self._original is not None
        value = self._original
        for wanted in self._wanted.values():
            value = self._stricter(value, wanted)
        if value != current:
            self._write(value)
        self._applied = self._read()  # as the interpreter stores it (the interval in whole µs)
        return self._applied
