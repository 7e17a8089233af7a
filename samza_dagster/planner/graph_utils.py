"""Graph traversal for the planner: Samza's ``GraphUtils.traverse``, made iterative and
cycle-safe.

``traverse(vertex, visitor, next_vertices)`` visits ``vertex`` and everything reachable from it
through ``next_vertices`` in depth-first pre-order — the order Samza's recursive version
visits — but each vertex at most once (per ``visited`` set), so a diamond does not re-visit its
tail, a cycle (e.g. a join whose output is sent back into the table it joins, through the
planner's virtual SendToTable → StreamTableJoin connections) terminates, and a chain of
thousands of operators never meets Python's recursion limit. The customisable
``next_vertices`` is what lets the planner add virtual connections without changing the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from samza_dagster.application.graph import find_cycle

T = TypeVar("T")

__all__ = ["find_cycle", "traverse"]


def traverse(
    vertex: T,
    visitor: Callable[[T], object],
    next_vertices: Callable[[T], Iterable[T]],
    visited: set[int] | None = None,
) -> None:
    """Call ``visitor`` once on ``vertex`` and on every vertex reachable from it.

    Vertices are identified by ``id()``; pass one ``visited`` set to several calls to visit
    each vertex once over several roots.
    """
    seen = visited if visited is not None else set()
    stack: list[T] = [vertex]
    while stack:
        current = stack.pop()
        key = id(current)
        if key in seen:
            continue
        seen.add(key)
        visitor(current)
        successors = next_vertices(current)
        if successors:
            # reversed, so the first successor is visited first (the recursive order)
            stack.extend(reversed(list(successors)))
