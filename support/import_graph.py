"""The import graph of a package, read from its source (AST; nothing is imported or run).

Every ``import`` counts, wherever it is written: at module level, inside a function (a lazy
import still ties the two modules together) or under ``if TYPE_CHECKING:``. So do imports
addressed by a string: a ``module:Class`` value a config loads (:func:`string_imports` in Python
source, :func:`config_file_imports` in .properties and .yaml files). Relative imports
are resolved; ``from pkg import name`` is an edge to ``pkg.name`` when that is a module of the
package, else to ``pkg``. ``tests/test_architecture.py`` checks the engine's graph with it.
"""

from __future__ import annotations

import ast
import graphlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Source:
    """One module's text; ``is_package`` for an ``__init__.py``."""

    text: str
    is_package: bool = False
    path: str = "<memory>"


def read_package(root: Path) -> dict[str, Source]:
    """Every module under the package directory ``root``, by dotted name (``pkg.sub.mod``)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = Source(path.read_text(), is_package, str(path))
    return found


def imported_names(source: Source, module: str) -> list[str]:
    """Absolute dotted names ``module`` imports (``from a import b`` gives ``a.b``), in order."""
    package = module if source.is_package else module.rpartition(".")[0]
    names = []
    for node in ast.walk(ast.parse(source.text, source.path)):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            names.extend(f"{origin}.{alias.name}" for alias in node.names)
    return names


_CLASS_PATH = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):[A-Z]\w*")  # module:Class


def string_imports(source: Source) -> list[str]:
    """Modules named by ``module:Class`` strings of the source (config values that load a
    class), an f-string's leading ``module:`` included."""
    names = []
    for node in ast.walk(ast.parse(source.text, source.path)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _CLASS_PATH.fullmatch(node.value.strip())
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            match = re.match(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):", str(node.values[0].value))
        else:
            continue
        if match:
            names.append(match.group(1))
    return names


def config_file_imports(path: Path) -> list[str]:
    """Modules named by ``module:Class`` values of a .properties or .yaml file."""
    names = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=") if path.suffix == ".properties" else line.partition(": ")
        match = _CLASS_PATH.fullmatch(value.strip().strip("\"'")) if sep else None
        if match:
            names.append(match.group(1))
    return names


def module_graph(sources: Mapping[str, Source]) -> dict[str, set[str]]:
    """module -> the modules of ``sources`` it imports (itself excluded)."""

    def resolve(name: str) -> str | None:
        while name and name not in sources:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, source in sources.items():
        targets = {resolve(name) for name in imported_names(source, module)}
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def package_graph(graph: Mapping[str, set[str]], depth: int = 2, nested: Iterable[str] = ()) -> dict[str, set[str]]:
    """The module graph collapsed to the first ``depth`` name parts (``samza_dagster.system``),
    or to one of the ``nested`` packages a module is in (``samza_dagster.coordinator.stream``: a
    sub-package with a layer of its own), without edges inside one package."""
    deepest_first = sorted(nested, key=lambda package: -package.count("."))

    def head(name: str) -> str:
        for package in deepest_first:
            if name == package or name.startswith(package + "."):
                return package
        return ".".join(name.split(".")[:depth])

    collapsed: dict[str, set[str]] = {}
    for module, targets in graph.items():
        edges = collapsed.setdefault(head(module), set())
        edges.update(head(t) for t in targets if head(t) != head(module))
    return collapsed


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One import cycle (``[a, b, ..., a]``), or None when the graph is acyclic."""
    try:
        graphlib.TopologicalSorter({node: set(targets) for node, targets in graph.items()}).prepare()
    except graphlib.CycleError as exc:
        cycle = list(exc.args[1])
        return cycle[::-1]  # graphlib lists it against the edges' direction
    return None


def upward_edges(graph: Mapping[str, Iterable[str]], rank: Mapping[str, int]) -> list[tuple[str, str]]:
    """Edges from a node to one ranked higher (nodes without a rank are not checked here)."""
    return sorted(
        (a, b) for a, targets in graph.items() for b in targets if a in rank and b in rank and rank[b] > rank[a]
    )
