"""Serdes by name: json, string, bytes, integer, long, noop (and pickle, only when named)."""

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
    "NoOpSerde",
    "PickleSerde",
    "Serde",
    "SerdeError",
    "SerdeRegistry",
    "StringSerde",
    "load_class",
]
