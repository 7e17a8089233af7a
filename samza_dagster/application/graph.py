"""Cycle detection over a graph given by a successor function — iterative, so a graph of
thousands of operators never hits Python's recursion limit. (The application package sits
above the planner, so the planner's ``graph_utils`` re-exports this rather than the reverse.)"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

_WHITE, _GREY, _BLACK = 0, 1, 2


def find_cycle(roots: Iterable[T], next_vertices: Callable[[T], Iterable[T]]) -> list[T] | None:
    """A cycle reachable from ``roots`` as ``[v0, v1, ..., v0]``, or None.

    Vertices are compared by identity (``id``), as operator specs are identity-hashed.
    """
    color: dict[int, int] = {}
    for root in roots:
        if color.get(id(root), _WHITE) != _WHITE:
            continue
        color[id(root)] = _GREY
        path: list[T] = [root]
        stack: list[Iterable[T]] = [iter(next_vertices(root))]
        while stack:
            advanced = False
            for nxt in stack[-1]:
                state = color.get(id(nxt), _WHITE)
                if state == _GREY:
                    start = next(i for i, v in enumerate(path) if v is nxt)
                    return path[start:] + [nxt]
                if state == _WHITE:
                    color[id(nxt)] = _GREY
                    path.append(nxt)
                    stack.append(iter(next_vertices(nxt)))
                    advanced = True
                    break
            if not advanced:
                color[id(path.pop())] = _BLACK
                stack.pop()
    return None
