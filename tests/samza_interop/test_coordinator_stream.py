"""Coordinator stream messages against Apache Samza 1.8.0's own classes: what the engine writes,
Samza's ``CoordinatorStreamSystemConsumer`` path (``JsonSerde`` key and value, the message
classes' getters) and its metadata-store path (``CoordinatorStreamValueSerde``) read with every
field equal; what Samza's ``CoordinatorStreamSystemProducer`` path writes, the engine folds into
its state."""

from __future__ import annotations

import pytest

from samza_dagster.coordinator.stream.messages import CoordinatorStreamMessage
from samza_dagster.coordinator.stream.state import CoordinatorStreamState
from tests.samza_interop.harness import SamzaWire, b64, unb64

WHO = {"host": "worker-1", "username": "samza", "timestamp": 1700000000123}


def _samza_reads(samza: SamzaWire, message: CoordinatorStreamMessage) -> dict:
    key, value = message.encode()
    return samza.call("coordinator.decode", key=b64(key), value=None if value is None else b64(value))


def test_samza_reads_a_set_changelog_the_engine_writes(samza: SamzaWire) -> None:
    message = CoordinatorStreamMessage.set_changelog("JobCoordinator", "Partition 3", 7, **WHO)
    got = _samza_reads(samza, message)
    assert got == {
        "version": 1,
        "type": "set-changelog",
        "key": "Partition 3",
        "isDelete": False,
        "source": "JobCoordinator",
        "username": "samza",
        "timestamp": 1700000000123,
        "messageMap": {
            "host": "worker-1",
            "username": "samza",
            "source": "JobCoordinator",
            "timestamp": 1700000000123,
            "values": {"Partition": "7"},
        },
        "taskName": "Partition 3",
        "partition": 7,
    }
    key, value = message.encode()
    assert value is not None
    store = samza.call("coordinator.store.decode", type="set-changelog", key=b64(key), value=b64(value))
    assert store == {"key": "Partition 3", "value": "7"}


def test_samza_reads_a_host_assignment_the_engine_writes(samza: SamzaWire) -> None:
    message = CoordinatorStreamMessage.set_container_host_assignment(
        "SamzaContainer-2", "2", "node-9.example", jmx_url="service:jmx:rmi://node-9:1", **WHO
    )
    got = _samza_reads(samza, message)
    assert (got["type"], got["key"], got["source"], got["timestamp"]) == (
        "set-container-host-assignment",
        "2",
        "SamzaContainer-2",
        1700000000123,
    )
    assert (got["hostLocality"], got["jmxUrl"], got["jmxTunnelingUrl"]) == (
        "node-9.example",
        "service:jmx:rmi://node-9:1",
        "",
    )
    key, value = message.encode()
    assert value is not None
    store = samza.call("coordinator.store.decode", type="set-container-host-assignment", key=b64(key), value=b64(value))
    assert store == {"key": "2", "value": "node-9.example"}


def test_samza_reads_a_set_config_and_a_delete_the_engine_writes(samza: SamzaWire) -> None:
    got = _samza_reads(samza, CoordinatorStreamMessage.set_config("job-submission", "task.window.ms", "250", **WHO))
    assert (got["type"], got["key"], got["configValue"], got["source"]) == (
        "set-config",
        "task.window.ms",
        "250",
        "job-submission",
    )
    deleted = _samza_reads(samza, CoordinatorStreamMessage.delete("job-submission", "set-config", "task.window.ms"))
    assert deleted == {"version": 1, "type": "set-config", "key": "task.window.ms", "isDelete": True}


@pytest.mark.parametrize(
    "request_fields",
    [
        {"type": "set-changelog", "source": "SamzaContainer", "key": "Partition 11", "partition": 4},
        {
            "type": "set-container-host-assignment",
            "source": "SamzaContainer",
            "key": "0",
            "host": "yarn-node-4",
            "jmxUrl": "service:jmx:rmi:///jndi/rmi://yarn-node-4:9999/jmxrmi",
            "jmxTunnelingUrl": "",
        },
        {"type": "set-config", "source": "CoordinatorStreamWriter", "key": "job.container.count", "value": "3"},
    ],
    ids=lambda r: r["type"],
)
def test_the_engine_reads_what_samzas_producer_writes(samza: SamzaWire, request_fields: dict) -> None:
    written = samza.call("coordinator.encode", **request_fields)
    message = CoordinatorStreamMessage.decode(unb64(written["key"]), unb64(written["value"]))
    assert (message.type, message.key, message.source) == (
        request_fields["type"],
        request_fields["key"],
        request_fields["source"],
    )
    state = CoordinatorStreamState()
    state.apply(message, "0")
    if message.type == "set-changelog":
        assert state.changelog == {"Partition 11": 4}
    elif message.type == "set-container-host-assignment":
        assert state.host_assignments == {"0": "yarn-node-4"}
        assert message.values["jmx-url"] == request_fields["jmxUrl"]
    else:
        assert state.config == {"job.container.count": "3"}
    # and the engine writes the same message back as Samza reads it
    again = CoordinatorStreamMessage.decode(*message.encode())
    assert again == message


def test_the_engine_reads_samzas_metadata_store_values_and_deletes(samza: SamzaWire) -> None:
    written = samza.call("coordinator.store.encode", type="set-changelog", key="Partition 6", value="2")
    state = CoordinatorStreamState()
    state.apply(CoordinatorStreamMessage.decode(unb64(written["key"]), unb64(written["value"])), "0")
    host = samza.call("coordinator.store.encode", type="set-container-host-assignment", key="5", value="h5")
    state.apply(CoordinatorStreamMessage.decode(unb64(host["key"]), unb64(host["value"])), "1")
    assert state.changelog == {"Partition 6": 2} and state.host_assignments == {"5": "h5"}
    delete = samza.call("coordinator.encode", type="delete", source="s", key="Partition 6", deletedType="set-changelog")
    assert delete["value"] is None
    state.apply(CoordinatorStreamMessage.decode(unb64(delete["key"]), None), "2")
    assert state.changelog == {}
