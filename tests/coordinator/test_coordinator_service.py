"""The coordinator stream on a real (in-memory) system, the JobCoordinator over real HTTP, and
the container's client."""

from __future__ import annotations

import json
import logging
import socket
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator

import pytest

from samza_dagster.config import Config
from samza_dagster.coordinator import CoordinatorStreamMessage, JobCoordinator
from samza_dagster.coordinator.client import (
    CoordinatorRequestError,
    CoordinatorUnreachableError,
    JobModelWatcher,
    fetch_job_model,
    poll_version,
    write_container_host,
)
from samza_dagster.coordinator.model.job_model import JobModel
from samza_dagster.coordinator.stream.reader_writer import CoordinatorStreamLocation, CoordinatorStreamReader
from samza_dagster.coordinator.stream.submission import SetOnceConfigChangeError, submit_job_config
from samza_dagster.coordinator.stream.writer_tool import run_coordinator_stream_writer
from samza_dagster.system import OutgoingMessageEnvelope, StreamSpec, system_factory
from samza_dagster.system.inmemory import InMemorySystemFactory
from support.waiting import wait_until

MONITOR_MS = 100


@pytest.fixture
def config() -> Iterator[Config]:
    system = f"mem{uuid.uuid4().hex[:8]}"
    cfg = Config(
        {
            "job.name": "order_counter",
            "job.id": "test_1",
            "job.default.system": system,
            f"systems.{system}.samza.factory": "inmemory",
            "task.inputs": f"{system}.orders,{system}.clicks",
            "job.container.count": "1",
            "stores.counts.factory": "inmemory",
            "stores.counts.changelog": f"{system}.counts-changelog",
            "job.coordinator.monitor.interval.ms": str(MONITOR_MS),
            "systems.kafka.sasl.password": "hunter2",
        }
    )
    admin = system_factory(cfg, system).get_admin(system, cfg)
    admin.create_stream(StreamSpec("orders", "orders", system, 4))
    admin.create_stream(StreamSpec("clicks", "clicks", system, 4))
    yield cfg
    InMemorySystemFactory.reset(system)


def _stream_messages(config: Config) -> list[tuple[str, CoordinatorStreamMessage]]:
    with CoordinatorStreamReader(config) as reader:
        messages, _ = reader.read(None)
    return messages


def _get(url: str, method: str = "GET", token: str | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, method=method, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_stream_is_named_as_samza_and_submission_writes_only_changes(config: Config) -> None:
    first = submit_job_config(config)
    assert CoordinatorStreamLocation.from_config(config).stream == "__samza_coordinator_order-counter_test-1"
    assert first.changed == dict(config)
    assert len(_stream_messages(config)) == len(config)

    again = submit_job_config(config)
    assert not again.wrote_anything
    assert len(_stream_messages(config)) == len(config)

    changed = config.with_overrides({"task.commit.ms": "5000"}).without(["systems.kafka.sasl.password"])
    result = submit_job_config(changed)
    assert result.changed == {"task.commit.ms": "5000"} and result.deleted == ["systems.kafka.sasl.password"]
    tail = _stream_messages(config)[-2:]
    assert [(m.key, m.is_delete) for _, m in tail] == [("task.commit.ms", False), ("systems.kafka.sasl.password", True)]


def test_reader_resumes_from_its_cursor(config: Config) -> None:
    submit_job_config(config)
    with CoordinatorStreamReader(config) as reader:
        messages, cursor = reader.read(None)
        assert cursor == str(len(messages))
        assert reader.read(cursor) == ([], cursor)
        run_coordinator_stream_writer(config, "set-config", "task.window.ms", "1000")
        more, cursor2 = reader.read(cursor)
        assert [(o, m.key, m.config_value) for o, m in more] == [(cursor, "task.window.ms", "1000")]
        assert int(cursor2) == int(cursor) + 1


def test_refuses_set_once_change_of_stateful_job_unless_force_reset(config: Config) -> None:
    submit_job_config(config)
    system = config["job.default.system"]
    changed = config.with_overrides({"stores.counts.changelog": f"{system}.counts-v2"})
    with pytest.raises(SetOnceConfigChangeError) as info:
        submit_job_config(changed)
    message = str(info.value)
    assert "stores.counts.changelog" in message and f"{system}.counts-changelog" in message and "counts-v2" in message
    with pytest.raises(SetOnceConfigChangeError, match="job.systemstreampartition.grouper.factory"):
        run_coordinator_stream_writer(
            config, "set-config", "job.systemstreampartition.grouper.factory", "group-by-system-stream-partition"
        )
    # Nothing was written by the refused attempts.
    assert len(_stream_messages(config)) == len(config)

    result = submit_job_config(changed, force_reset=True)
    assert result.changed == {"stores.counts.changelog": f"{system}.counts-v2"}


def test_coordinator_rebuilds_model_when_container_count_changes(config: Config) -> None:
    with JobCoordinator(config) as coordinator:
        url = coordinator.url
        assert url.startswith("http://127.0.0.1:")
        model = fetch_job_model(url)
        assert model.version == 1
        assert list(model.containers) == ["0"]
        tasks = model.all_tasks()
        assert sorted(tasks) == [f"Partition {i}" for i in range(4)]
        system = config["job.default.system"]
        assert {(s.stream, s.partition) for s in tasks["Partition 2"].ssps} == {("orders", 2), ("clicks", 2)}
        changelog = {name: t.changelog_partition for name, t in tasks.items()}
        assert changelog == {f"Partition {i}": i for i in range(4)}
        assert model.config["systems.kafka.sasl.password"] == "********"

        # the coordinator's own monitor picks the change up (no refresh() from the test here)
        run_coordinator_stream_writer(config, "set-config", "job.container.count", "2")
        new_model: JobModel = wait_until(lambda: (m := fetch_job_model(url)).version > 1 and m, timeout_s=30)  # type: ignore[assignment]
        assert new_model.version == 2
        assert sorted(new_model.containers) == ["0", "1"]
        assert set(new_model.containers["1"].tasks) == {"Partition 1", "Partition 3"}
        assert {n: t.changelog_partition for n, t in new_model.all_tasks().items()} == changelog
        assert new_model.config["job.container.count"] == "2"
        assert all(ssp.system == system for t in new_model.all_tasks().values() for ssp in t.ssps)

        # A config-only change also bumps the version (containers restart to pick it up).
        run_coordinator_stream_writer(config, "set-config", "task.commit.ms", "1234")
        wait_until(lambda: poll_version(url) == 3, timeout_s=5)
        # A change that cannot be applied keeps serving the last good model.
        # (refresh() reads the stream up to the write, so the assertion sees the change applied)
        run_coordinator_stream_writer(config, "set-config", "job.container.count", "9")
        coordinator.refresh()
        assert poll_version(url) == 3
        # Back to the served config: nothing to rebuild, no new version.
        run_coordinator_stream_writer(config, "set-config", "job.container.count", "2")
        coordinator.refresh()
        assert poll_version(url) == 3
        run_coordinator_stream_writer(config, "set-config", "job.container.count", "4")
        model4: JobModel = wait_until(lambda: (m := fetch_job_model(url)).version == 4 and m, timeout_s=5)  # type: ignore[assignment]
        assert len(model4.containers) == 4
        assert {n: t.changelog_partition for n, t in model4.all_tasks().items()} == changelog


def test_new_input_stream_adds_tasks_and_keeps_existing_changelog_partitions(config: Config) -> None:
    system = config["job.default.system"]
    admin = system_factory(config, system).get_admin(system, config)
    admin.create_stream(StreamSpec("refunds", "refunds", system, 6))
    with JobCoordinator(config) as coordinator:
        before = {n: t.changelog_partition for n, t in coordinator.job_model.all_tasks().items()}
        run_coordinator_stream_writer(
            config, "set-config", "task.inputs", f"{system}.orders,{system}.clicks,{system}.refunds"
        )
        model = wait_until(lambda: (m := fetch_job_model(coordinator.url)).version == 2 and m, timeout_s=5)
        after = {n: t.changelog_partition for n, t in model.all_tasks().items()}
        assert {n: after[n] for n in before} == before
        assert after["Partition 4"] == 4 and after["Partition 5"] == 5
    # The new assignments are on the stream, for the next coordinator.
    changelog = {m.key: m.changelog_partition for _, m in _stream_messages(config) if m.type == "set-changelog"}
    assert changelog == after


def test_http_errors_404_405_and_config(config: Config) -> None:
    with JobCoordinator(config) as coordinator:
        status, body = _get(coordinator.url + "/nope")
        assert status == 404 and "/nope" in body["error"]
        status, body = _get(coordinator.url + "/", method="POST")
        assert status == 405 and "POST" in body["error"]
        status, body = _get(coordinator.url + "/config")
        assert status == 200 and body["job.name"] == "order_counter"
        assert body["systems.kafka.sasl.password"] == "********"
        assert _get(coordinator.url + "/healthz") == (200, {"status": "ok", "version": 1})


def test_bearer_token_required_when_configured(config: Config) -> None:
    secured = config.with_overrides({"job.coordinator.http.token": "s3cret"})
    with JobCoordinator(secured) as coordinator:
        assert _get(coordinator.url + "/")[0] == 401
        assert _get(coordinator.url + "/healthz", token="wrong")[0] == 401
        with pytest.raises(CoordinatorRequestError, match="401"):
            fetch_job_model(coordinator.url)
        model = fetch_job_model(coordinator.url, token="s3cret")
        assert model.config["job.coordinator.http.token"] == "********"


def test_unreachable_coordinator_is_a_clear_error_after_its_retries() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(CoordinatorUnreachableError, match=f"{url}.*3 attempts"):
        fetch_job_model(url, retries=2, backoff_s=0.05)


def test_fetch_uses_environment_url(config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    with JobCoordinator(config) as coordinator:
        monkeypatch.setenv("SAMZA_COORDINATOR_URL", coordinator.url)
        assert fetch_job_model().version == 1


def test_malformed_messages_in_stream_are_skipped_with_warning_naming_offset(
    config: Config, caplog: pytest.LogCaptureFixture
) -> None:
    submit_job_config(config)
    head = len(config)
    where = CoordinatorStreamLocation.from_config(config)
    producer = system_factory(config, where.system).get_producer(where.system, config)
    producer.register("test")
    for key, value in [
        (b'[1,"set-config","task.window.ms"]', b'{"values":{"value":'),  # truncated JSON
        (b'[2,"set-config","task.window.ms"]', b'{"values":{"value":"5"}}'),  # unknown version
        (
            b'["1","set-config","task.window.ms"]',
            b'{"host":"h","username":"u","source":"java","timestamp":1,"values":{"value":"7000"}}',
        ),
    ]:
        producer.send("test", OutgoingMessageEnvelope(where.system_stream, value, key=key, partition=0))
    with caplog.at_level(logging.WARNING, logger="samza_dagster.coordinator"):
        with JobCoordinator(config, submit=False) as coordinator:
            assert coordinator.config["task.window.ms"] == "7000"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(f"offset {head} " in w and "not JSON" in w for w in warnings), warnings
    assert any(f"offset {head + 1} " in w and "unknown coordinator stream message version 2" in w for w in warnings), (
        warnings
    )


def test_host_affinity_survives_a_coordinator_restart(config: Config) -> None:
    with JobCoordinator(config.with_overrides({"job.container.count": "2"})) as coordinator:
        first = fetch_job_model(coordinator.url)
        assert first.previous_hosts == {}
        write_container_host(config, "0", "worker-a")
        write_container_host(config, "1", "worker-b")
        model = wait_until(lambda: (m := fetch_job_model(coordinator.url)).previous_hosts.get("1") and m, timeout_s=5)
        assert model.previous_hosts == {"0": "worker-a", "1": "worker-b"}
        assert model.version == first.version  # an announcing container must not restart the others
    with JobCoordinator(config.with_overrides({"job.container.count": "2"})) as restarted:
        again = fetch_job_model(restarted.url)
        assert again.previous_hosts == {"0": "worker-a", "1": "worker-b"}
        assert {n: t.changelog_partition for n, t in again.all_tasks().items()} == {
            n: t.changelog_partition for n, t in first.all_tasks().items()
        }


def test_watcher_notices_a_newer_job_model(config: Config) -> None:
    with JobCoordinator(config) as coordinator:
        watcher = JobModelWatcher(coordinator.url, current_version=1, interval_s=0.05).start()
        try:
            assert not watcher.check(force=True)
            run_coordinator_stream_writer(config, "set-config", "task.window.ms", "100")
            wait_until(lambda: watcher.new_version_available, timeout_s=5)
            assert watcher.latest_version == 2
        finally:
            watcher.stop()


def test_start_fails_clearly_and_cleans_up(config: Config) -> None:
    from samza_dagster.config import ConfigError
    from samza_dagster.system import StreamNotFoundError

    too_many = JobCoordinator(config.with_overrides({"job.container.count": "5"}))
    with pytest.raises(ConfigError, match="job.container.count is 5 but the job has only 4 tasks"):
        too_many.start()
    assert too_many.url is None
    system = config["job.default.system"]
    with pytest.raises(StreamNotFoundError, match="missing"):
        JobCoordinator(config.with_overrides({"task.inputs": f"{system}.missing"})).start()
