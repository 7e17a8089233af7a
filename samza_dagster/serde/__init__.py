"""Serdes by name: json, string, bytes, integer, long, noop, tagged-json (and pickle, only when named)."""

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
from samza_dagster.serde.tagged_json import PickledStateError, TaggedJsonSerde, register_type

__all__ = [
    "BUILTIN_SERDES",
    "BytesSerde",
    "IntegerSerde",
    "JsonSerde",
    "LongSerde",
    "NoOpSerde",
    "PickleSerde",
    "PickledStateError",
    "Serde",
    "SerdeError",
    "SerdeRegistry",
    "StringSerde",
    "TaggedJsonSerde",
    "load_class",
    "register_type",
]
