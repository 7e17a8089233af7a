"""The test suite, laid out like the package: a test of ``samza_dagster/<package>/`` lives in
``tests/<package>/`` (docs/architecture.md, "The repository")."""

from pathlib import Path

#: the checkout's root, however deep the test module that asks sits under tests/
REPO = Path(__file__).resolve().parent.parent
