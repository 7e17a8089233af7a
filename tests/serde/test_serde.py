"""Serdes by name, the serde registry, and the system factory registry."""

from __future__ import annotations

import pytest

from samza_dagster.config import Config, ConfigError
from samza_dagster.serde import (
    BytesSerde,
    IntegerSerde,
    JsonSerde,
    LongSerde,
    NoOpSerde,
    SerdeError,
    SerdeRegistry,
    StringSerde,
)
from samza_dagster.system import SystemStream, system_factory


class UpperSerde:
    def to_bytes(self, obj):
        return obj.upper().encode()

    def from_bytes(self, data):
        return data.decode().lower()


def test_builtin_serdes_round_trip_with_samza_byte_layouts():
    assert JsonSerde().to_bytes({"amount": 1234, "country": "USD"}) == b'{"amount":1234,"country":"USD"}'
    assert JsonSerde().from_bytes(b'{"a":[1,2]}') == {"a": [1, 2]}
    assert StringSerde().from_bytes(StringSerde().to_bytes("été")) == "été"
    assert IntegerSerde().to_bytes(1) == b"\x00\x00\x00\x01"  # Java ByteBuffer.putInt, big-endian
    assert IntegerSerde().from_bytes(b"\xff\xff\xff\xff") == -1
    assert LongSerde().to_bytes(2**40) == (2**40).to_bytes(8, "big")
    assert BytesSerde().to_bytes(bytearray(b"x")) == b"x"
    assert NoOpSerde().to_bytes({"any": "object"}) == {"any": "object"}


@pytest.mark.parametrize(
    ("serde", "data"),
    [(JsonSerde(), b"{not json"), (StringSerde(), b"\xff\xfe"), (IntegerSerde(), b"\x00"), (LongSerde(), b"123")],
)
def test_undecodable_bytes_raise_serde_error(serde, data):
    with pytest.raises(SerdeError):
        serde.from_bytes(data)


def test_unencodable_values_raise_serde_error():
    with pytest.raises(SerdeError, match="integer: expected int"):
        IntegerSerde().to_bytes("1")
    with pytest.raises(SerdeError, match="out of range"):
        IntegerSerde().to_bytes(2**40)
    with pytest.raises(SerdeError, match="json"):
        JsonSerde().to_bytes({1, 2})


def test_registry_resolves_stream_then_system_serdes_and_user_classes():
    config = Config(
        {
            "systems.log.samza.msg.serde": "json",
            "systems.log.samza.key.serde": "string",
            "systems.log.streams.counts.samza.msg.serde": "long",
            "serializers.registry.upper.class": "tests.serde.test_serde:UpperSerde",
            "streams.shout.samza.system": "log",
            "streams.shout.samza.msg.serde": "upper",
        }
    )
    registry = SerdeRegistry(config)
    assert isinstance(registry.msg_serde(SystemStream("log", "anything")), JsonSerde)
    assert isinstance(registry.key_serde(SystemStream("log", "anything")), StringSerde)
    assert isinstance(registry.msg_serde(SystemStream("log", "counts")), LongSerde)
    assert isinstance(registry.msg_serde(SystemStream("log", "shout")), UpperSerde)
    assert registry.msg_serde(SystemStream("kafka", "x")) is None


def test_registry_errors_name_the_key():
    registry = SerdeRegistry(
        Config({"systems.log.samza.msg.serde": "avro", "serializers.registry.bad.class": "no.such.module:Serde"})
    )
    with pytest.raises(ConfigError, match=r"systems.log.samza.msg.serde.*'avro'.*known: bytes, integer, json"):
        registry.msg_serde(SystemStream("log", "s"))
    with pytest.raises(ConfigError, match="serializers.registry.bad.class.*cannot import"):
        registry.get("bad")


def test_system_factory_defaults_to_log_and_rejects_unknown_names():
    from samza_dagster.system.log import LogSystemFactory

    assert isinstance(system_factory(Config({}), "anything"), LogSystemFactory)
    with pytest.raises(
        ConfigError, match=r"systems.x.samza.factory.*'hdfs'.*known: files, iceberg, inmemory, kafka, log"
    ):
        system_factory(Config({"systems.x.samza.factory": "hdfs"}), "x")
    with pytest.raises(ConfigError, match="not a SystemFactory"):
        system_factory(Config({"systems.x.samza.factory": "tests.serde.test_serde:UpperSerde"}), "x")
