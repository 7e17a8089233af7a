"""The system's pyiceberg catalog and its tables: loaded, created from a batch's schema, retried.

``load_catalog(<system>, **props)`` names the catalog after the system. A table is created the first
time rows are written to it, from their Arrow schema (``create_table_if_not_exists``: two containers
creating it at once both end with the one table). Commits that conflict with another writer —
pyiceberg's ``CommitFailedException`` once its own retries are spent, or a SQLite catalog that is
busy — are tried again on the refreshed table, with backoff, up to ``iceberg.commit.retries`` times.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pyarrow as pa
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
from pyiceberg.table import Table

from samza_dagster.system.errors import TableWriteError
from samza_dagster.system.iceberg.config import IcebergSystemConfig

log = logging.getLogger(__name__)

T = TypeVar("T")

_MIN_BACKOFF_S = 0.05
_MAX_BACKOFF_S = 2.0
_CATALOG_LOAD_ATTEMPTS = 5


def _busy(exc: BaseException) -> bool:
    """A catalog database another process holds (SQLite's "database is locked")."""
    return "database is locked" in str(exc) or "database is busy" in str(exc)


class IcebergTables:
    """One system's catalog, namespace and the tables loaded from it."""

    def __init__(self, config: IcebergSystemConfig) -> None:
        self.config = config
        self._catalog: Catalog | None = None

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            catalog = self._load_catalog()
            namespace = self.config.namespace
            try:
                catalog.create_namespace_if_not_exists(namespace)
            except Exception:  # noqa: BLE001 - another container created it at the same moment: fine if it exists
                if not catalog.namespace_exists(namespace):
                    raise
            self._catalog = catalog
        return self._catalog

    def _load_catalog(self) -> Catalog:
        """``load_catalog``; again when a concurrent first load was creating the SQL catalog's own
        tables at the same moment (a second look finds them)."""
        for attempt in range(_CATALOG_LOAD_ATTEMPTS):
            try:
                return load_catalog(self.config.system, **self.config.catalog_properties)
            except Exception as exc:  # noqa: BLE001 - retried a few times; the last failure is raised
                if attempt == _CATALOG_LOAD_ATTEMPTS - 1 or "already exists" not in str(exc):
                    raise
                time.sleep(_MIN_BACKOFF_S)
        raise TableWriteError(f"iceberg system {self.config.system!r}: the catalog did not load")

    def identifier(self, table: str) -> tuple[str, str]:
        return (self.config.namespace, table)

    def name(self, table: str) -> str:
        return f"{self.config.namespace}.{table}"

    def load(self, table: str) -> Table | None:
        try:
            return self.retry(self.name(table), lambda: self.catalog.load_table(self.identifier(table)))
        except NoSuchTableError:
            return None

    def load_or_create(self, table: str, schema: pa.Schema) -> Table:
        """The table, created from ``schema`` when it does not exist (by this or a concurrent writer)."""

        def create() -> Table:
            try:
                return self.catalog.create_table_if_not_exists(self.identifier(table), schema=schema)
            except Exception:  # noqa: BLE001 - created by another container in the meantime: load that one
                found = self.load(table)
                if found is None:
                    raise
                return found

        return self.retry(self.name(table), create)

    def tables(self) -> list[str]:
        return sorted(ident[-1] for ident in self.catalog.list_tables(self.config.namespace))

    def retry(self, what: str, attempt: Callable[[], T], refresh: Callable[[], Any] | None = None) -> T:
        """``attempt()``, again after a commit conflict or a busy catalog (module docstring)."""
        backoff = _MIN_BACKOFF_S
        tries = 0
        while True:
            try:
                return attempt()
            except CommitFailedException as exc:
                cause: BaseException = exc
            except Exception as exc:  # noqa: BLE001 - only a busy catalog is retried; anything else is raised
                if not _busy(exc):
                    raise
                cause = exc
            if tries == self.config.commit_retries:
                raise TableWriteError(
                    f"iceberg system {self.config.system!r}: {what}: gave up after {tries + 1} attempts, "
                    f"each conflicting with another writer: {cause}"
                ) from cause
            log.info("iceberg %s: %s; retrying in %.2f s", what, cause, backoff)
            time.sleep(backoff * (1 + random.random()))
            backoff = min(backoff * 2, _MAX_BACKOFF_S)
            if refresh is not None:
                refresh()
            tries += 1
