"""Serdes by name: json, string, bytes, integer, long, noop, msgpack (and pickle, only when named)."""

from samza_dagster.serde.msgpack_serde import MsgpackSerde, PickledStateError, register_type
from samza_dagster.serde.registry import BUILTIN_SERDES, SerdeRegistry, load_class
from samza_dagster.serde.serdes import (
    BytesSerde,
    IntegerSerde,
    JsonSerde,
    LongSerde,
    NoOpSerde,
    PickleSerde,
    Serde,
    SerdeError,
    StringSerde,
)

__all__ = [
    "BUILTIN_SERDES",
    "BytesSerde",
    "IntegerSerde",
    "JsonSerde",
    "LongSerde",
    "MsgpackSerde",
    "NoOpSerde",
    "PickleSerde",
    "PickledStateError",
    "Serde",
    "SerdeError",
    "SerdeRegistry",
    "StringSerde",
    "load_class",
    "register_type",
]
