"""The rules the code's shape follows, checked on the source itself (AST, no imports run):

* no import cycle between the engine's modules, nor between its packages — every import counts,
  lazy ones inside functions and ``TYPE_CHECKING`` ones included;
* a package imports only packages at or below its own layer, in the order of the "Layers"
  table of docs/architecture.md (this test reads the table, so the document stays the truth);
* the engine (``samza_dagster``) never imports the applications (``jobs``), the Dagster
  resources (``resources``), the benchmarks (``bench``), their shared support (``support``) or
  the tests (``tests``); the benchmarks and ``support`` never import the tests; the applications
  import none of those — string-addressed imports (``task.class=tests.apps.tasks:NoOpTask``)
  in source and in the repo's .properties/.yaml files count;
* only ``samza_dagster.orchestration`` imports dagster;
* every exception class the engine defines is a ``SamzaError``, so ``except SamzaError`` catches
  any of them, and none shadows a builtin's name;
* the engine raises no builtin exception (``ValueError``, ``KeyError``, ...) where a ``SamzaError``
  naming what was wrong belongs: the few builtins it may raise are allowed below, each with why.

Each rule also gets a synthetic graph that breaks it, so a checker that stopped finding
anything would fail here.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import samza_dagster
from samza_dagster.errors import SamzaError
from support.import_graph import (
    Source,
    config_file_imports,
    find_cycle,
    imported_names,
    module_graph,
    package_graph,
    read_package,
    string_imports,
    upward_edges,
)

ENGINE = Path(samza_dagster.__file__).resolve().parent
REPO = ENGINE.parent
UPWARD = ("jobs", "resources", "bench", "support", "tests", "definitions")
ARCHITECTURE_MD = REPO / "docs" / "architecture.md"


def _engine() -> dict[str, Source]:
    return read_package(ENGINE)


def _layer_ranks(markdown: str) -> dict[str, int]:
    """``samza_dagster.<package>`` -> its row in the Layers table (packages of one row share it;
    a sub-package with a row of its own, ``coordinator/stream/``, is ranked apart from its parent)."""
    section = markdown.split("## Layers", 1)[1].split("\n## ", 1)[0]
    ranks: dict[str, int] = {}
    rows = [line for line in section.splitlines() if line.startswith("|") and "`" in line]
    for row, line in enumerate(rows):
        cell = line.split("|")[2]
        for name in re.findall(r"`(\w+(?:/\w+)*)(?:/|\.py)`", cell):
            ranks["samza_dagster." + name.replace("/", ".")] = row
    return ranks


# -- the checkers, on synthetic graphs: each must be able to fail ---------------------------------


def _synthetic(**modules: str) -> dict[str, Source]:
    return {name.replace("__", "."): Source(text, is_package=not name.count("__")) for name, text in modules.items()}


def test_a_cycle_through_a_lazy_import_is_found():
    sources = _synthetic(
        pkg="",
        pkg__a="from pkg.b import thing\n",
        pkg__b="def f():\n    from pkg import c\n",
        pkg__c="from . import a\n",
    )
    cycle = find_cycle(module_graph(sources))
    assert cycle is not None and cycle[0] == cycle[-1]
    assert set(cycle) == {"pkg.a", "pkg.b", "pkg.c"}
    for importer, imported in zip(cycle, cycle[1:], strict=False):  # listed in the direction of the imports
        assert imported in module_graph(sources)[importer]


def test_a_type_checking_import_counts_and_an_acyclic_graph_passes():
    cyclic = _synthetic(
        pkg="",
        pkg__a="import pkg.b\n",
        pkg__b="from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n",
    )
    assert find_cycle(module_graph(cyclic)) is not None
    acyclic = _synthetic(pkg="", pkg__a="import pkg.b\n", pkg__b="import os\n")
    assert find_cycle(module_graph(acyclic)) is None


def test_package_cycles_and_upward_imports_are_found():
    sources = _synthetic(
        top="",
        top__low="",
        top__low__x="from top.high.y import Y\n",
        top__high="",
        top__high__y="from ..low import x\n",
    )
    packages = package_graph(module_graph(sources))
    assert find_cycle(packages) is not None
    ranks = {"top.low": 0, "top.high": 1}
    assert upward_edges(packages, ranks) == [("top.low", "top.high")]


def test_a_sub_package_with_a_layer_of_its_own_is_checked_apart_from_its_parent():
    sources = _synthetic(
        top="",
        top__coord="",
        top__coord__service="from top.coord.proto.msg import M\n",
        top__coord__proto="",
        top__coord__proto__msg="from top.mid.x import X\n",
        top__mid="",
        top__mid__x="from top.coord.proto import msg\n",
    )
    assert find_cycle(package_graph(module_graph(sources))) is not None  # as one package: a cycle
    packages = package_graph(module_graph(sources), nested=["top.coord.proto"])
    assert packages["top.coord.proto"] == {"top.mid"} and packages["top.coord"] == {"top.coord.proto"}
    assert find_cycle(packages) is not None  # proto and mid still import each other
    ranks = {"top.coord.proto": 0, "top.mid": 1, "top.coord": 2}
    assert upward_edges(packages, ranks) == [("top.coord.proto", "top.mid")]


def test_the_layer_table_is_read():
    ranks = _layer_ranks(ARCHITECTURE_MD.read_text())
    assert ranks["samza_dagster.errors"] < ranks["samza_dagster.config"] < ranks["samza_dagster.system"]
    assert ranks["samza_dagster.planner"] == ranks["samza_dagster.operators"]
    assert ranks["samza_dagster.container"] < ranks["samza_dagster.runtime"] < ranks["samza_dagster.orchestration"]
    assert (
        ranks["samza_dagster.coordinator.stream"]
        < ranks["samza_dagster.startpoint"]
        < ranks["samza_dagster.coordinator"]
        < ranks["samza_dagster.container"]
    )


def test_imported_names_resolves_relative_imports():
    names = imported_names(Source("from .. import a\nfrom .b import c\n"), "pkg.sub.mod")
    assert names == ["pkg.a", "pkg.sub.b.c"]


# -- the rules, on the engine ---------------------------------------------------------------------


def test_no_import_cycle_between_engine_modules():
    assert find_cycle(module_graph(_engine())) is None


def _engine_packages(ranks: dict[str, int]) -> dict[str, set[str]]:
    """The engine's package graph, the sub-packages with a row of their own kept apart."""
    return package_graph(module_graph(_engine()), nested=[name for name in ranks if name.count(".") > 1])


def test_no_import_cycle_between_engine_packages():
    assert find_cycle(_engine_packages(_layer_ranks(ARCHITECTURE_MD.read_text()))) is None


def test_every_package_has_a_layer_and_imports_none_above_it():
    ranks = _layer_ranks(ARCHITECTURE_MD.read_text())
    packages = _engine_packages(ranks)
    unranked = sorted(p for p in packages if p != "samza_dagster" and p not in ranks)
    assert not unranked, f"add these to the Layers table of docs/architecture.md: {unranked}"
    assert not upward_edges(packages, ranks)


def test_the_engine_never_imports_applications_resources_benchmarks_or_tests():
    bad = [
        (module, name)
        for module, source in _engine().items()
        for name in imported_names(source, module)
        if name.split(".")[0] in UPWARD
    ]
    assert not bad, bad


def test_only_orchestration_imports_dagster():
    bad = [
        (module, name)
        for module, source in _engine().items()
        for name in imported_names(source, module)
        if name.split(".")[0] in ("dagster", "dagster_graphql", "dagster_pyspark")
        and not module.startswith("samza_dagster.orchestration")
    ]
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


def _all_imports(folder: str) -> list[tuple[str, str]]:
    """(where, module) of every import of a top-level folder: statements, ``module:Class``
    strings in its Python source and values in its .properties/.yaml files."""
    found = [
        (module, name)
        for module, source in read_package(REPO / folder).items()
        for name in [*imported_names(source, module), *string_imports(source)]
    ]
    for path in sorted([*(REPO / folder).rglob("*.properties"), *(REPO / folder).rglob("*.yaml")]):
        found.extend((str(path.relative_to(REPO)), name) for name in config_file_imports(path))
    return found


def test_string_addressed_imports_are_found():
    source = Source(
        'CFG = {"task.class": "tests.apps.tasks:NoOpTask", "url": "127.0.0.1:80"}\n'
        'def f(app):\n    return f"tests.hl_apps.apps:{app}"\n'
    )
    assert string_imports(source) == ["tests.apps.tasks", "tests.hl_apps.apps"]


def test_config_file_imports_are_found(tmp_path):
    (tmp_path / "job.properties").write_text(
        "# task.class=x.y:Commented\ntask.class=tests.apps.tasks:NoOpTask\n"
        "systems.kafka.consumer.bootstrap.servers=127.0.0.1:9092\n"
    )
    (tmp_path / "defs.yaml").write_text("attributes:\n  app_class: 'jobs.wordcount:WordCount'\n")
    assert config_file_imports(tmp_path / "job.properties") == ["tests.apps.tasks"]
    assert config_file_imports(tmp_path / "defs.yaml") == ["jobs.wordcount"]


def test_the_engine_names_no_upper_module_in_a_string():
    bad = [
        (module, name)
        for module, source in _engine().items()
        for name in string_imports(source)
        if name.split(".")[0] in UPWARD
    ]
    assert not bad, bad


def test_benchmarks_and_their_support_never_import_the_tests():
    bad = [
        (where, name)
        for folder in ("bench", "support")
        for where, name in _all_imports(folder)
        if name.split(".")[0] == "tests"
    ]
    assert not bad, bad


def test_the_applications_import_no_tests_benchmarks_or_support():
    bad = [(where, name) for where, name in _all_imports("jobs") if name.split(".")[0] in ("tests", "bench", "support")]
    assert not bad, bad


# -- the engine raises SamzaErrors ------------------------------------------------------------------

# The builtin exceptions the engine may construct anywhere, and why they are not SamzaErrors.
ALLOWED_BUILTIN_ERRORS = {
    # the body of an abstract method, which Python spells this way
    "NotImplementedError",
    # an unreachable branch: a value argparse or the caller's own check already excluded
    "AssertionError",
    # a module's ``__getattr__`` (a package's lazy exports): the protocol Python requires
    "AttributeError",
    # Python's iterator and generator protocols
    "StopIteration",
    "StopAsyncIteration",
    "GeneratorExit",
}
_BUILTIN_ERRORS = {
    name
    for name in dir(builtins)
    if isinstance(getattr(builtins, name), type) and issubclass(getattr(builtins, name), BaseException)
}


def _caught_by(handler: ast.ExceptHandler) -> set[str]:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return {kind.id for kind in kinds if isinstance(kind, ast.Name)}


def builtin_errors_raised(text: str) -> list[tuple[int, str]]:
    """``(line, name)`` of every builtin exception the module constructs or raises, except the
    allowed ones, those raised inside a ``try`` whose own handler catches them (turned into a
    SamzaError there: the builtin never leaves the function) and those built as an argument of a
    call (the cause a SamzaError is built with)."""
    tree = ast.parse(text)
    handled: set[int] = set()  # ids of nodes raised inside a try that catches them
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        caught = set().union(*(_caught_by(h) for h in node.handlers)) if node.handlers else set()
        caught_types = [getattr(builtins, c) for c in caught if c in _BUILTIN_ERRORS]
        for statement in node.body:
            for inner in ast.walk(statement):
                if isinstance(inner, ast.Raise) and inner.exc is not None:
                    call = inner.exc.func if isinstance(inner.exc, ast.Call) else inner.exc
                    if (
                        isinstance(call, ast.Name)
                        and call.id in _BUILTIN_ERRORS
                        and any(issubclass(getattr(builtins, call.id), t) for t in caught_types)
                    ):
                        handled.add(id(call))
    for node in ast.walk(tree):  # a builtin passed to a call is a cause the SamzaError built there names
        if isinstance(node, ast.Call):
            handled.update(
                id(arg.func) for arg in [*node.args, *(k.value for k in node.keywords)] if isinstance(arg, ast.Call)
            )
    found = []
    for node in ast.walk(tree):
        target = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            target = node.func
        elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Name):
            target = node.exc
        if (
            target is not None
            and target.id in _BUILTIN_ERRORS
            and target.id not in ALLOWED_BUILTIN_ERRORS
            and id(target) not in handled
        ):
            found.append((target.lineno, target.id))
    return sorted(set(found))


def test_the_builtin_error_checker_finds_raises_and_constructions_but_not_caught_ones():
    text = (
        "def f(x):\n"
        "    if x:\n"
        "        raise ValueError('bad')\n"  # found
        "    raise KeyError\n"  # found: raised by name
        "def g():\n"
        "    return TypeError('built, raised later')\n"  # found: constructed
        "def h(x):\n"
        "    try:\n"
        "        if not x:\n"
        "            raise ValueError('caught below')\n"  # caught by its own handler
        "        raise TimeoutError('not caught')\n"  # found: OSError-kind, not caught
        "    except (KeyError, ValueError) as exc:\n"
        "        raise SamzaError(str(exc)) from exc\n"
        "def i():\n"
        "    raise NotImplementedError\n"  # allowed
        "def j():\n"
        "    raise Unreachable('x', cause=ValueError('a cause'))\n"  # the cause of another error
    )
    assert builtin_errors_raised(text) == [(3, "ValueError"), (4, "KeyError"), (6, "TypeError"), (11, "TimeoutError")]


def test_the_engine_raises_samza_errors_not_builtins():
    bad = [
        f"{source.path}:{line}: {name}"
        for source in _engine().values()
        for line, name in builtin_errors_raised(source.text)
    ]
    assert not bad, (
        "raise a SamzaError subclass naming what was wrong (or allow the builtin, saying why):\n" + "\n".join(bad)
    )


# -- scheduling state changes only through its owners' named methods ----------------------------

#: (owning module, class): the attributes of these change only inside their own module
_OWNED_STATE = {
    "samza_dagster.container.task_worker": "TaskWorker",
    "samza_dagster.task.coordinator": "ContainerRequests",
}


def _slots_of(module: str, cls: str) -> set[str]:
    return set(getattr(importlib.import_module(module), cls).__slots__)


def outside_writes(sources: dict[str, Source], owned: dict[str, set[str]]) -> list[str]:
    """``module:line: .attr`` for every assignment (plain, augmented, or a delete) to one of the
    ``owned`` attributes in a module other than its owner's. By name: a same-named attribute of
    another class is flagged too — rename it rather than explain it."""
    found = []
    for module, source in sources.items():
        names = {attr for owner, attrs in owned.items() if owner != module for attr in attrs}
        for node in ast.walk(ast.parse(source.text)):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign | ast.Delete):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and target.attr in names
                    and not (isinstance(target.value, ast.Name) and target.value.id == "self")
                ):
                    found.append(f"{module}:{target.lineno}: .{target.attr}")
    return found


def test_an_outside_write_to_owned_state_is_found():
    sources = _synthetic(
        **{
            "a.loop": "def f(w):\n    w.commit_due = True\n    w.other = 1\n",
            "a.worker": "def g(w):\n    w.commit_due = False\n",
        }
    )
    assert outside_writes(sources, {"a.worker": {"commit_due"}}) == ["a.loop:2: .commit_due"]


def test_task_scheduling_state_and_container_requests_change_only_through_their_methods():
    owned = {module: _slots_of(module, cls) for module, cls in _OWNED_STATE.items()}
    assert not outside_writes(_engine(), owned), (
        "change TaskWorker / ContainerRequests state through their named methods (need_commit, "
        "start_process, ask, notice, ...):\n" + "\n".join(outside_writes(_engine(), owned))
    )
