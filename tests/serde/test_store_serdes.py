"""Operator state without pickle: the msgpack serde keeps Python types, never runs code
named by the bytes it reads, and state written with pickle by an earlier version fails with a
message telling how to migrate."""

from __future__ import annotations

import dataclasses
import enum
import pickle
import threading
from typing import NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from samza_dagster.application import KV
from samza_dagster.runtime import create_runner, run_job
from samza_dagster.serde import MsgpackSerde, PickledStateError, SerdeError, register_type
from samza_dagster.storage.kv import InMemoryRawStore
from samza_dagster.storage.serialized import SerializedKeyValueStore
from samza_dagster.system.partitioner import partition_for_key
from support.hl_harness import bounded, create, produce, read_all
from support.waiting import wait_until
from tests.hl_apps import base

SERDE = MsgpackSerde()


@register_type
@dataclasses.dataclass
class Click:
    user: int
    pages: tuple


@register_type
class Point(NamedTuple):
    x: int
    y: int


@register_type
class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Unregistered:
    pass


keys = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text() | st.binary(),
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3),
    max_leaves=8,
)
values = st.recursive(
    keys
    | st.floats(allow_nan=False)
    | st.dates()
    | st.datetimes()
    | st.uuids()
    | st.decimals(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(keys, inner, max_size=4)
        | st.dictionaries(st.text(), inner, max_size=4)
        | st.tuples(inner, inner)
        | st.sets(keys, max_size=3)
    ),
    max_leaves=12,
)


@given(values)
def test_values_come_back_as_the_types_they_were(value):
    back = SERDE.from_bytes(SERDE.to_bytes(value))
    assert back == value
    assert type(back) is type(value)


@given(keys)
def test_equal_keys_encode_to_equal_bytes(key):
    assert SERDE.to_bytes(key) == SERDE.to_bytes(SERDE.from_bytes(SERDE.to_bytes(key)))


def test_registered_dataclasses_namedtuples_and_enums_round_trip():
    value = {"c": Click(7, ("a", "b")), "p": Point(1, 2), "e": Colour.BLUE, "kv": KV((1, 2), b"\x00")}
    assert SERDE.from_bytes(SERDE.to_bytes(value)) == value
    assert isinstance(SERDE.from_bytes(SERDE.to_bytes(Point(1, 2))), Point)


def test_plain_values_are_plain_msgpack_that_any_reader_reads():
    """Only Python-only types are extensions: a dict of strings, numbers and lists is ordinary
    MessagePack, readable by another language's reader (here: msgpack without our hooks)."""
    import msgpack

    value = {"user": 7, "pages": ["a", "b"], "score": 1.5, "raw": b"\x00"}
    assert msgpack.unpackb(SERDE.to_bytes(value)) == value


def test_integers_beyond_64_bits_round_trip():
    for value in (2**64, -(2**63) - 1, 10**40):
        assert SERDE.from_bytes(SERDE.to_bytes(value)) == value


def test_an_unregistered_class_is_a_clear_error_naming_the_type_and_the_fix():
    with pytest.raises(SerdeError, match=r"Unregistered.*register_type"):
        SERDE.to_bytes({"x": Unregistered()})


def test_bytes_naming_an_unregistered_class_build_nothing():
    import msgpack

    data = msgpack.packb(msgpack.ExtType(8, msgpack.packb(["os.system", ["echo hacked"]])))
    with pytest.raises(SerdeError, match=r"'os.system'.*not registered"):
        SERDE.from_bytes(data)


def test_an_empty_map_is_not_taken_for_a_pickle():
    assert SERDE.from_bytes(SERDE.to_bytes({})) == {}


class _Exploit:
    """Unpickling this would create a file: the proof that pickle runs code from its bytes."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_pickle_in_an_operator_store_is_refused_without_running_it(tmp_path):
    target = tmp_path / "created-by-unpickling"
    raw = InMemoryRawStore()
    raw.put(SERDE.to_bytes(("k",)), pickle.dumps(_Exploit(str(target))))
    store = SerializedKeyValueStore("window-w", raw, SERDE, SERDE)
    with pytest.raises(PickledStateError) as err:
        store.get(("k",))
    with pytest.raises(PickledStateError):
        list(store.all())
    assert not target.exists()
    message = str(err.value)
    assert "store 'window-w'" in message
    assert "stores.window-w.key.serde=pickle" in message and "stores.window-w.msg.serde=pickle" in message
    assert "delete the store's changelog stream" in message


def test_state_written_with_pickle_by_an_earlier_version_fails_the_job_with_the_migration(tmp_path):
    """A table filled while its store was pickled (as earlier versions did for operator state)
    is restored from its changelog; the next read fails the job naming the store and both
    ways out — and naming pickle for that store reads it again."""
    cfg = bounded(base(tmp_path, "mig", "StreamTableJoinApp", **{"app.store.factory": "rocksdb"}), "S1", "S2")
    for stream, count in (("S1", 2), ("S2", 2), ("S3", 2)):
        create(cfg, stream, count)
    table_store = "table-T"
    pickled = {f"stores.{table_store}.key.serde": "pickle", f"stores.{table_store}.msg.serde": "pickle"}
    produce(cfg, "S1", [(u % 2, None, {"user": u, "name": f"n{u}"}) for u in range(4)])
    first = run_job(cfg.with_overrides(pickled))
    assert first.succeeded, first.summary_line()

    produce(cfg, "S2", [(partition_for_key(str(u).encode(), 2), u, {"user": u, "page": f"v{u}"}) for u in range(4)])
    refused = run_job(cfg)
    assert not refused.succeeded
    errors = " ".join(s.error or "" for s in refused.summaries)
    assert f"store {table_store!r}" in errors and "pickle" in errors, errors
    assert read_all(cfg, "S3") == []

    resumed = run_job(cfg.with_overrides(pickled))
    assert resumed.succeeded, resumed.summary_line()
    assert sorted((k, v["name"]) for k, v in read_all(cfg, "S3")) == [(u, f"n{u}") for u in range(4)]


def test_window_and_join_state_survive_a_restart_in_tagged_json(tmp_path):
    """Values with tuples in keys and values (window panes, join buffers) restored from the
    changelog come back hashable and whole: a second run resumes the first's windows."""
    cfg = base(
        tmp_path,
        "tj",
        "TwoStageCountApp",
        **{"app.store.factory": "rocksdb", "job.intermediate.stream.partitions": "2"},
    )
    for stream, count in (("words", 2), ("counts", 2)):
        create(cfg, stream, count)
    produce(cfg, "words", [(i % 2, None, w) for i, w in enumerate(["a", "b", "a", "c"])])
    runner = create_runner(cfg)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    try:
        # the write-back cache coalesces the two writes of "a": one changelog entry per word
        wait_until(lambda: _window_entries(tmp_path) >= 3, 60, "window state of a, b and c in the changelog")
    finally:
        runner.stop()
        thread.join(60)
    produce(cfg, "words", [(0, None, "a"), (1, None, "c")])
    final = run_job(bounded(cfg, "words"))
    assert final.succeeded, final.summary_line()
    counts = {}
    for key, value in read_all(cfg, "counts"):
        counts[key] = counts.get(key, 0) + value
    assert counts == {"a": 3, "b": 1, "c": 2}


def _window_entries(tmp_path) -> int:
    """Entries written to the window store's changelog so far."""
    from samza_dagster.config import Config
    from samza_dagster.system.factories import system_factory

    cfg = Config({"systems.log.samza.factory": "log", "systems.log.log.path": str(tmp_path / "log")})
    admin = system_factory(cfg, "log").get_admin("log", cfg)
    try:
        names = [n for n in admin.list_streams() if n.endswith("-count-w-changelog")]
        if not names:
            return 0
        md = admin.get_system_stream_metadata(names)
        return sum(int(pm.upcoming_offset) for m in md.values() for pm in m.partitions.values())
    finally:
        admin.stop()
