"""Helpers shared by the application/planner tests: an application from a function."""

from __future__ import annotations

from collections.abc import Callable

from samza_dagster.application import StreamApplication, StreamApplicationDescriptor

BASE_CONFIG = {"job.name": "job", "systems.kafka.samza.factory": "kafka"}


class FnApp(StreamApplication):
    def __init__(self, fn: Callable[[StreamApplicationDescriptor], None]) -> None:
        self.fn = fn

    def describe(self, app: StreamApplicationDescriptor) -> None:
        self.fn(app)


def key(m):
    return m


def pair(a, b):
    return (a, b)
