"""High-level applications of the operator-runtime tests, and ``base``: the config that runs one
of them (``app.class`` names this package, which only the tests may reach)."""

from __future__ import annotations

from samza_dagster.config import Config


def base(tmp_path, name: str, app: str, **extra: str) -> Config:
    entries = {
        "job.name": name,
        "job.default.system": "log",
        "job.factory.class": "thread",
        "systems.log.samza.factory": "log",
        "systems.log.log.path": str(tmp_path / "log"),
        "app.class": f"tests.hl_apps.apps:{app}",
        "task.commit.ms": "500",
        "app.store.factory": "inmemory",
    }
    entries.update(extra)
    return Config(entries)
