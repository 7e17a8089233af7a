"""The rules the code's shape follows, checked on the source itself (AST, no imports run):

* the engine (``samza_dagster``) never imports the applications (``jobs``), the Dagster
  resources (``resources``), the benchmarks (``bench``) or the tests (``tests``);
* only ``samza_dagster.orchestration`` imports dagster;
* ``errors``, ``model`` (the stream model), ``config`` and ``serde`` sit at the bottom: config and
  serde import nothing of the engine's higher layers at module level;
* every exception class the engine defines is a ``SamzaError``, so ``except SamzaError`` catches
  any of them, and none shadows a builtin's name.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import pkgutil
from pathlib import Path

import samza_dagster
from samza_dagster.errors import SamzaError

ENGINE = Path(samza_dagster.__file__).resolve().parent
UPWARD = ("jobs", "resources", "bench", "tests", "definitions")
#: what each bottom layer may import of the engine at module level
BOTTOM = {"config": {"config", "errors", "model"}, "serde": {"serde", "errors", "config", "model"}}


def _modules() -> dict[str, ast.Module]:
    return {str(p.relative_to(ENGINE.parent)): ast.parse(p.read_text(), str(p)) for p in ENGINE.rglob("*.py")}


def _imports(tree: ast.Module, *, module_level_only: bool = False) -> list[str]:
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    names = []
    for node in nodes:
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_the_engine_never_imports_applications_resources_benchmarks_or_tests():
    bad = [(path, name) for path, tree in _modules().items() for name in _imports(tree)
           if name.split(".")[0] in UPWARD]
    assert not bad, bad


def test_only_orchestration_imports_dagster():
    bad = [(path, name) for path, tree in _modules().items() for name in _imports(tree)
           if name.split(".")[0] in ("dagster", "dagster_graphql") and not path.startswith("samza_dagster/orchestration/")]
    assert not bad, bad


def test_config_and_serde_are_the_bottom_layers():
    bad = []
    for path, tree in _modules().items():
        parts = path.split("/")
        layer = parts[1] if len(parts) > 2 else None
        allowed = BOTTOM.get(layer)
        if allowed is None:
            continue
        for name in _imports(tree, module_level_only=True):
            top = name.split(".")
            if top[0] == "samza_dagster" and len(top) > 1 and top[1] not in allowed:
                bad.append((path, name))
    assert not bad, bad


def _engine_exception_classes() -> list[type[BaseException]]:
    found = []
    for info in pkgutil.walk_packages(samza_dagster.__path__, "samza_dagster."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == module.__name__:
                found.append(obj)
    return found


def test_every_engine_error_is_a_samza_error_and_none_shadows_a_builtin():
    classes = _engine_exception_classes()
    assert len(classes) > 20  # the walk found the packages' errors
    assert not [c.__qualname__ for c in classes if not issubclass(c, SamzaError)]
    assert not [c.__qualname__ for c in classes if c.__name__.rstrip("_") in dir(builtins)]


def test_benchmarks_and_their_support_never_import_the_tests():
    repo = ENGINE.parent
    bad = []
    for folder in ("bench", "support"):
        for path in (repo / folder).rglob("*.py"):
            for name in _imports(ast.parse(path.read_text(), str(path))):
                if name.split(".")[0] == "tests":
                    bad.append((str(path.relative_to(repo)), name))
    assert not bad, bad
