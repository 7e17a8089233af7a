"""A container whose system lost what it had sent since its last commit starts again from that
commit (issue 53, point 3: a Kafka cluster restarted under an exactly-once job aborts the open
transaction — librdkafka drops the queued sends, "Local: Purged in queue" — and the container
failed; runtime/restarts.py). Shown on the stateful exactly-once job of the crash tests (word counts
in a changelogged RocksDB store, each input's id sent to ``out``) on the embedded log, whose
producer's fifth flush with output pending fails once with a TransientSystemError, as the Kafka
producers' flush does then: the job succeeds after one restart, its summary says why, and the store
and the ``read_committed`` output equal a run without the failure. Any other failure, or one past
``job.container.retry.count``, still fails the job."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from samza_dagster.config import Config
from samza_dagster.runtime import run_job
from samza_dagster.system.errors import SystemWriteError, TransientSystemError
from samza_dagster.system.factories import system_factory
from tests.forwarding import ForwardingProducer
from tests.reliability.test_reliability_crash import MESSAGES, _fill, _store_contents
from tests.reliability.test_reliability_exactly_once import _committed_output, _crash_free_stores
from tests.reliability.test_reliability_exactly_once import _config as exactly_once_config

#: the flush (with output pending) that fails: after a few commits, so the restart resumes mid-input
FAILING_FLUSH = 5
#: log roots whose producer has failed its flush (once per root: the restarted container's is fine)
_FAILED: set[str] = set()


class _FailingFlush(ForwardingProducer):
    def __init__(self, inner: Any, root: str, error: type[Exception], every_start: bool) -> None:
        super().__init__(inner)
        self._root, self._error, self._every_start = root, error, every_start
        self._pending = False
        self._flushes = 0

    def send(self, source, envelope):
        self._pending = self._pending or envelope.system_stream.stream == "out"
        self.inner.send(source, envelope)

    def flush(self, source):
        if self._pending:
            self._pending = False
            self._flushes += 1
            if self._flushes == FAILING_FLUSH and (self._every_start or self._root not in _FAILED):
                _FAILED.add(self._root)
                raise self._error("the cluster aborted the transaction: sends purged (injected)")
        self.inner.flush(source)


class FailingFlushLogFactory:
    """The embedded log, its producer's fifth flush with output pending failing with the error
    ``test.flush.error`` names (transient | write), once per log root unless ``test.flush.every.start``."""

    def _inner(self, system_name: str) -> Any:
        return system_factory(Config({f"systems.{system_name}.samza.factory": "log"}), system_name)

    def supports_transactions(self, system_name: str, config: Config) -> bool:
        return True  # the log's

    def get_admin(self, system_name: str, config: Config) -> Any:
        return self._inner(system_name).get_admin(system_name, config)

    def get_consumer(self, system_name: str, config: Config) -> Any:
        return self._inner(system_name).get_consumer(system_name, config)

    def get_producer(self, system_name: str, config: Config) -> Any:
        error = TransientSystemError if config.get_str("test.flush.error") == "transient" else SystemWriteError
        root = config.get_str(f"systems.{system_name}.log.path")
        every = config.get_bool("test.flush.every.start", False)
        return _FailingFlush(self._inner(system_name).get_producer(system_name, config), root, error, every)


def _failing(tmp_path: Path, runner: str, error: str, **extra: str) -> Config:
    config = exactly_once_config(
        tmp_path,
        **{
            "job.factory.class": runner,
            "systems.log.samza.factory": f"{__name__}:FailingFlushLogFactory",
            "test.flush.error": error,
            **extra,
        },
    )
    _fill(config)
    return config


@pytest.mark.parametrize("runner", ["thread", "process"])
def test_a_transient_system_failure_restarts_the_container_from_its_checkpoint(tmp_path, runner):
    expected = _crash_free_stores(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    config = _failing(run_dir, runner, "transient")

    result = run_job(config)

    assert result.succeeded, result.summary_line()
    (summary,) = result.summaries
    assert len(summary.restarts) == 1 and "(injected)" in summary.restarts[0], summary.restarts
    assert "restarted from its last checkpoint once" in summary.one_line()
    assert result.runs == 1  # the container started again inside its run, not the job
    assert result.messages_processed > MESSAGES  # what followed the last commit was processed twice
    assert _store_contents(run_dir) == expected
    assert _committed_output(config) == Counter({f"m{i}": 1 for i in range(MESSAGES)})


def test_any_other_failure_still_fails_the_job_at_once(tmp_path):
    result = run_job(_failing(tmp_path, "thread", "write"))
    assert not result.succeeded
    (summary,) = result.summaries
    assert summary.restarts == [] and "SystemWriteError" in (summary.error or ""), summary.one_line()


def test_a_transient_failure_past_the_retry_count_fails_the_job(tmp_path):
    config = _failing(
        tmp_path, "thread", "transient", **{"job.container.retry.count": "2", "test.flush.every.start": "true"}
    )
    result = run_job(config)
    assert not result.succeeded
    (summary,) = result.summaries
    assert len(summary.restarts) == 2 and "TransientSystemError" in (summary.error or ""), summary.one_line()
    assert Counter(_committed_output(config).values()) == Counter({1: sum(_committed_output(config).values())})
