"""Dense integer offsets, as the log and in-memory systems number their messages.

A partition's messages are at offsets 0, 1, 2, ... carried as strings (as in Samza); these are
the parsing, ordering and successor rules both systems' consumers and admins share.
"""

from __future__ import annotations

from collections.abc import Mapping

from samza_dagster.model import SystemStreamPartition
from samza_dagster.system.errors import OffsetError


def parse_offset(ssp: SystemStreamPartition, offset: str, system_kind: str) -> int:
    """The position of a registered starting offset; a clear error naming ``ssp``, the offset
    and the kind of system (``"log"``, ``"in-memory"``) when it is not one."""
    try:
        position = int(offset)
    except (TypeError, ValueError):
        position = -1
    if position < 0:
        raise OffsetError(f"{ssp}: offset {offset!r} is not a non-negative integer offset of the {system_kind} system")
    return position


def compare_int_offsets(offset1: str, offset2: str) -> int:
    """Dense integer offsets compare as integers ("10" is after "9")."""
    a, b = int(offset1), int(offset2)
    return (a > b) - (a < b)


def offsets_after(offsets: Mapping[SystemStreamPartition, str]) -> dict[SystemStreamPartition, str]:
    """The offset just after each of ``offsets``."""
    return {ssp: str(int(offset) + 1) for ssp, offset in offsets.items()}
