"""Coordinator stream messages: byte-exact with Samza's wire format (docs/reference.md, "Wire formats")."""

from __future__ import annotations

import pytest

from samza_dagster.coordinator import CoordinatorStreamMessage, coordinator_stream_name
from samza_dagster.coordinator.stream.messages import CoordinatorStreamFormatError
from samza_dagster.coordinator.stream.state import CoordinatorStreamState

FIXED = {"host": "h1", "username": "samza", "timestamp": 1700000000123}


def test_set_config_encodes_byte_exact() -> None:
    msg = CoordinatorStreamMessage.set_config("job-submission", "job.container.count", "8", **FIXED)
    assert msg.encode() == (
        b'[1,"set-config","job.container.count"]',
        b'{"host":"h1","username":"samza","source":"job-submission","timestamp":1700000000123,"values":{"value":"8"}}',
    )


def test_set_changelog_encodes_partition_as_string_under_samzas_capital_p() -> None:
    msg = CoordinatorStreamMessage.set_changelog("job-coordinator", "Partition 3", 7, **FIXED)
    assert msg.encode() == (
        b'[1,"set-changelog","Partition 3"]',
        b'{"host":"h1","username":"samza","source":"job-coordinator","timestamp":1700000000123,'
        b'"values":{"Partition":"7"}}',
    )


def test_set_container_host_assignment_encodes_byte_exact() -> None:
    msg = CoordinatorStreamMessage.set_container_host_assignment("SamzaContainer-0", "0", "worker-7", **FIXED)
    assert msg.encode() == (
        b'[1,"set-container-host-assignment","0"]',
        b'{"host":"h1","username":"samza","source":"SamzaContainer-0","timestamp":1700000000123,'
        b'"values":{"host":"worker-7","jmx-url":"","jmx-tunneling-url":""}}',
    )


def test_delete_encodes_null_value() -> None:
    msg = CoordinatorStreamMessage.delete("src", "set-config", "task.window.ms", **FIXED)
    assert msg.is_delete
    assert msg.encode() == (b'[1,"set-config","task.window.ms"]', None)


def test_non_ascii_is_written_as_utf8_not_escaped() -> None:
    msg = CoordinatorStreamMessage.set_config("s", "job.description", "zürich", **FIXED)
    assert '"values":{"value":"zürich"}'.encode() in msg.encode()[1]


def test_defaults_fill_host_user_and_current_time() -> None:
    msg = CoordinatorStreamMessage.set_config("s", "k", "v")
    assert msg.host and msg.username and msg.timestamp > 1_600_000_000_000


def test_decodes_hand_written_samza_bytes_with_string_version() -> None:
    key = b'["1","set-config","systems.kafka.producer.bootstrap.servers"]'
    value = (
        b'{"host":"samza-am-1","username":"yarn","source":"SamzaJob",'
        b'"timestamp":1500000000000,"values":{"value":"broker:9092"}}'
    )
    msg = CoordinatorStreamMessage.decode(key, value)
    assert (msg.version, msg.type, msg.key) == (1, "set-config", "systems.kafka.producer.bootstrap.servers")
    assert msg.values == {"value": "broker:9092"}
    assert (msg.host, msg.username, msg.source, msg.timestamp) == ("samza-am-1", "yarn", "SamzaJob", 1500000000000)
    assert not msg.is_delete
    # Re-encoding writes the integer version.
    assert msg.encode()[0] == b'[1,"set-config","systems.kafka.producer.bootstrap.servers"]'


def test_decodes_delete_with_null_value() -> None:
    msg = CoordinatorStreamMessage.decode(b'[1,"set-config","task.window.ms"]', None)
    assert msg.is_delete and msg.type == "set-config" and msg.key == "task.window.ms"
    assert CoordinatorStreamMessage.decode(b'[1,"set-config","x"]', b"null").is_delete


def test_round_trip_of_every_type() -> None:
    for msg in (
        CoordinatorStreamMessage.set_config("s", "a.b", "c", **FIXED),
        CoordinatorStreamMessage.set_changelog("s", "SystemStreamPartition [kafka, t, 0]", 0, **FIXED),
        CoordinatorStreamMessage.set_container_host_assignment("s", "1", "host-b", **FIXED),
        CoordinatorStreamMessage.delete("s", "set-changelog", "Partition 1", **FIXED),
    ):
        decoded = CoordinatorStreamMessage.decode(*msg.encode())
        if msg.is_delete:
            assert decoded.is_delete and (decoded.type, decoded.key) == (msg.type, msg.key)
        else:
            assert decoded == msg


@pytest.mark.parametrize("key", [b'[2,"set-config","k"]', b'["7","set-config","k"]'])
def test_unknown_version_is_a_clear_error(key: bytes) -> None:
    with pytest.raises(CoordinatorStreamFormatError, match="unknown coordinator stream message version"):
        CoordinatorStreamMessage.decode(key, b'{"values":{"value":"v"}}')


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        (b"{not json", b"{}", "key is not JSON"),
        (b'[1,"set-config"]', b"{}", r"\[version, type, key\]"),
        (b'[1,"set-config","k"]', b"{broken", "value of set-config 'k' is not JSON"),
        (b'[1,"set-config","k"]', b'{"values":[1]}', "must be a JSON object"),
        (None, b"{}", "no key"),
    ],
)
def test_malformed_messages_raise_format_errors(key, value, match: str) -> None:
    with pytest.raises(CoordinatorStreamFormatError, match=match):
        CoordinatorStreamMessage.decode(key, value)


def test_coordinator_stream_name_replaces_underscores_in_both_parts() -> None:
    assert coordinator_stream_name("my_job", "prod_2") == "__samza_coordinator_my-job_prod-2"
    assert coordinator_stream_name("wikipedia-feed", 1) == "__samza_coordinator_wikipedia-feed_1"


def test_state_last_message_per_type_and_key_wins_and_delete_removes() -> None:
    state = CoordinatorStreamState()
    state.apply_all(
        [
            ("0", CoordinatorStreamMessage.set_config("s", "a", "1")),
            ("1", CoordinatorStreamMessage.set_config("s", "b", "2")),
            ("2", CoordinatorStreamMessage.set_config("s", "a", "3")),
            ("3", CoordinatorStreamMessage.delete("s", "set-config", "b")),
            # Same key, different type: independent entries.
            ("4", CoordinatorStreamMessage.set_changelog("s", "a", 4)),
            ("5", CoordinatorStreamMessage.set_container_host_assignment("s", "0", "h")),
            ("6", CoordinatorStreamMessage.set_container_host_assignment("s", "0", "h2")),
        ]
    )
    assert state.config == {"a": "3"}
    assert state.changelog == {"a": 4}
    assert state.host_assignments == {"0": "h2"}


def test_the_design_documents_lowercase_partition_and_hostname_are_still_read() -> None:
    old_changelog = CoordinatorStreamMessage.decode(
        b'[1,"set-changelog","Partition 2"]',
        b'{"host":"h","username":"u","source":"s","timestamp":1,"values":{"partition":"5"}}',
    )
    assert old_changelog.changelog_partition == 5
    old_host = CoordinatorStreamMessage.decode(
        b'[1,"set-container-host-assignment","1"]',
        b'{"host":"h","username":"u","source":"s","timestamp":1,"values":{"hostname":"worker-3"}}',
    )
    assert old_host.hostname == "worker-3"
    state = CoordinatorStreamState()
    state.apply(old_changelog)
    state.apply(old_host)
    assert state.changelog == {"Partition 2": 5} and state.host_assignments == {"1": "worker-3"}
