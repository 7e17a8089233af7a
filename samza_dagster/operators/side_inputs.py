"""Side-input tables of the high-level API: ``TableDescriptor(side_inputs=..., side_input_fn=...)``.

The operator runtime configures the table's store with ``stores.<store>.side.inputs`` (see
``prepare.py``); the container's side-inputs manager (``container/side_inputs.py``) reads each
side-input partition to its newest offset before the task starts and then follows it for the
life of the container, applying every message through this processor — so a table that changes
while the job runs is seen by the joins that read it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from samza_dagster.application.kv import KV
from samza_dagster.model import IncomingMessageEnvelope


class TableSideInputsProcessor:
    """``side_input_fn(KV(key, message))`` → the table's entries; without one, the message's own
    key and value."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[KV], Iterable[tuple[Any, Any]]] | None) -> None:
        self.fn = fn

    def process(self, envelope: IncomingMessageEnvelope, store: Any) -> Iterable[tuple[Any, Any]]:
        kv = KV(envelope.key, envelope.message)
        return (kv,) if self.fn is None else self.fn(kv)
