"""Every key a user can set is defined once (samza_dagster/config/keys.py) and docs/reference.md
lists exactly those definitions; the pre-flight built on them reports keys nothing reads (with
the key most likely meant) and never a key another package reads."""

from __future__ import annotations

import logging
import re

import pytest

from samza_dagster.config import Config, ConfigError
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.keys import KEYS, markdown_table
from samza_dagster.config.preflight import (
    belongs_to_a_plugin,
    check_unread_keys,
    check_values,
    definition_of,
    unread_keys,
)
from samza_dagster.config.task_config import TaskConfig
from samza_dagster.runtime.preflight import check_job_config
from tests import REPO

REFERENCE = REPO / "docs" / "reference.md"
ENGINE_KEY = re.compile(r"`((?:job|task|app|systems|streams|stores|serializers|metrics|samza|dagster)\.[^`\s]+)`")


def _generated_table(markdown: str) -> str:
    return markdown.split("<!-- keys: begin (generated from samza_dagster/config/keys.py) -->\n", 1)[1].split(
        "<!-- keys: end -->", 1
    )[0]


def test_the_reference_lists_every_definition_as_defined():
    assert _generated_table(REFERENCE.read_text()) == markdown_table(), (
        "docs/reference.md's key table differs from samza_dagster/config/keys.py; the table should be:\n"
        + markdown_table()
    )


def test_every_key_the_reference_names_is_defined():
    """Keys named anywhere in the reference (prose, other tables) are keys the engine reads."""
    undefined = []
    for name in ENGINE_KEY.findall(REFERENCE.read_text()):
        if name.endswith(("*", "…", ".", ">")) or "=" in name:
            continue  # a namespace (systems.<s>.consumer.*, streams.<stream-id>.…) or a key=value example
        concrete = re.sub(r"<([a-z-]+)>", r"\1", name)  # <store> -> store
        if definition_of(concrete) is None and not belongs_to_a_plugin(concrete, Config({})):
            undefined.append(name)
    assert not undefined, f"docs/reference.md names keys nothing defines: {undefined}"


@pytest.mark.parametrize("definition", list(KEYS.values()), ids=list(KEYS))
def test_a_definition_reads_its_own_default_back(definition):
    """The default is a value of the key's type: written as a user would, it reads back equal."""
    key = definition.key(**{part.replace("-", "_"): "x" for part in re.findall(r"<([a-z-]+)>", definition.name)})
    assert definition.matches(key)
    assert definition.doc.strip()
    if definition.default not in (None, []):
        text = (
            definition.default
            if isinstance(definition.default, str)
            else (str(definition.default).lower() if isinstance(definition.default, bool) else str(definition.default))
        )
        assert definition.read(Config({key: text}), key) == definition.default
    assert definition.read(Config({}), key) == definition.default  # unset: the default


def test_views_read_through_the_definitions():
    config = Config(
        {
            "job.name": "j",
            "job.default.system": "kafka",
            "job.intermediate.stream.partitions": "7",
            "task.chooser.class": "my.module:Factory",
        }
    )
    assert JobConfig(config).default_system == "kafka"
    assert JobConfig(Config({})).default_system == "log"
    assert JobConfig(config).coordinator_system == "kafka"
    assert JobConfig(config).intermediate_stream_partitions == 7
    assert TaskConfig(config).chooser_class == "my.module:Factory"
    with pytest.raises(ConfigError, match="'job.intermediate.stream.partitions' must be at least 1, got 0"):
        _ = JobConfig(Config({"job.intermediate.stream.partitions": "0"})).intermediate_stream_partitions


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        ("task.clas", "task.class"),
        ("streams.sentences.samza.bouned", "streams.sentences.samza.bounded"),
        ("systems.log.streams.words.samza.bootsrap", "systems.log.streams.words.samza.bootstrap"),
        ("stores.counts.changelg", "stores.counts.changelog"),
        ("job.container.cont", "job.container.count"),
        ("app.clas", "app.class"),
    ],
)
def test_a_typo_under_a_known_prefix_is_refused_naming_the_key_it_meant(key, meant, caplog):
    config = Config({"job.name": "j", key: "true"})
    with pytest.raises(ConfigError) as refused:
        check_unread_keys(config)
    assert refused.value.key == key
    assert f"{key!r}" in str(refused.value) and f"did you mean {meant!r}" in str(refused.value)
    assert "job.config.misspelled.keys=warn" in str(refused.value)
    # the documented key relaxes it to one WARNING
    relaxed = config.with_overrides({"job.config.misspelled.keys": "warn"})
    with caplog.at_level(logging.WARNING, logger="samza_dagster.config.preflight"):
        found = check_unread_keys(relaxed)
    assert [(u.key, u.suggestion) for u in found] == [(key, meant)]
    (record,) = caplog.records
    assert f"{key!r}" in record.getMessage() and f"did you mean {meant!r}" in record.getMessage()


def test_a_key_nothing_reads_without_a_near_one_is_only_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="samza_dagster.config.preflight"):
        found = check_unread_keys(Config({"job.name": "j", "task.frobnicate.level": "3"}))
    assert [u.key for u in found] == ["task.frobnicate.level"] and len(caplog.records) == 1


def test_a_key_nothing_reads_without_a_near_one_is_still_reported():
    assert [(u.key, u.suggestion) for u in unread_keys(Config({"task.frobnicate.level": "3"}))] == [
        ("task.frobnicate.level", None)
    ]


def test_keys_of_plugins_and_of_applications_are_not_reported():
    config = Config(
        {
            "systems.kafka.samza.factory": "kafka",
            "systems.kafka.consumer.bootstrap.servers": "127.0.0.1:9092",
            "systems.kafka.consumer.fetch.wait.max.ms": "100",
            "systems.kafka.producer.linger.ms": "5",
            "systems.kafka.admin.request.timeout.ms": "1000",
            "systems.kafka.default.stream.segment.bytes": "1048576",
            "systems.custom.samza.factory": "my.pkg:CustomSystemFactory",
            "systems.custom.endpoint.url": "http://127.0.0.1:1",
            "serializers.registry.avro.class": "my.pkg:AvroSerdeFactory",
            "serializers.registry.avro.schema.registry.url": "http://127.0.0.1:2",
            "stores.my-store.factory": "inmemory",
            "stores.my-store.changelog": "kafka.my-store-changelog",
            "streams.page-views.samza.system": "kafka",
            "streams.page-views.samza.physical.name": "PageViewEvent",
            "task.chooser.priorities.kafka.page.views.v2": "2",
            "spark.master": "local[2]",
            "app.classifier.strategy": "cheap",  # an application's own key
            "wordcount.output.stream": "counts",
        }
    )
    assert unread_keys(config) == []


def test_every_typed_value_is_checked():
    check_values(Config({"task.commit.ms": "100", "streams.s.samza.bounded": "true", "stores.t.factory": "inmemory"}))
    for key, value, needle in [
        ("task.commit.ms", "soon", "'task.commit.ms' must be an integer, got 'soon'"),
        ("streams.s.samza.bounded", "yes please", "'streams.s.samza.bounded' must be true or false"),
        (
            "systems.log.streams.s.samza.reset.offset",
            "maybe",
            "'systems.log.streams.s.samza.reset.offset' must be true or false",
        ),
        ("stores.t.factory", "leveldb", "'stores.t.factory' must be one of rocksdb, inmemory"),
        ("job.container.count", "0", "'job.container.count' must be at least 1, got 0"),
        ("task.inputs", "sentences", "'task.inputs': expected system.stream, got 'sentences'"),
        ("app.class", "NoModule", "'app.class': expected module:Class, got 'NoModule'"),
        ("systems.kafka.consumer.park.max.bytes", "-1", "'systems.kafka.consumer.park.max.bytes' must be at least 1"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(needle)) as err:
            check_values(Config({key: value}))
        assert err.value.key == key


def test_a_misspelt_serde_fails_the_preflight_naming_its_key():
    base = {
        "job.name": "j",
        "job.factory.class": "thread",
        "task.class": "tests.apps.tasks:NoOpTask",
        "task.inputs": "log.sentences",
    }
    check_job_config(Config({**base, "systems.log.samza.msg.serde": "json", "stores.s.key.serde": "string"}))
    for key in (
        "systems.log.samza.msg.serde",
        "streams.sentences.samza.key.serde",
        "systems.log.streams.sentences.samza.msg.serde",
        "stores.s.msg.serde",
    ):
        with pytest.raises(ConfigError, match=re.escape(f"config key {key!r} names unknown serde 'jsno'")) as err:
            check_job_config(Config({**base, key: "jsno"}))
        assert err.value.key == key


def test_a_stream_property_builds_every_key_that_sets_it_in_the_order_they_are_read():
    from samza_dagster.config import keys

    assert keys.STREAM_RETENTION_MS.stream_keys(["a", "b.c"], "kafka", "orders") == [
        "streams.a.retention.ms",
        "streams.b.c.retention.ms",
        "systems.kafka.streams.orders.retention.ms",
        "systems.kafka.default.stream.retention.ms",
    ]
    # a property only the stream id sets has no per-system keys
    assert keys.STREAM_SYSTEM.stream_keys(["a"], "kafka", "orders") == ["streams.a.samza.system"]
    assert keys.stream_property("retention.ms") is keys.STREAM_RETENTION_MS
    with pytest.raises(ConfigError, match="no form"):
        keys.STREAM_SYSTEM.system_default_key("kafka")


def test_namespaces_and_patterns_are_built_from_their_definitions():
    from samza_dagster.config import keys

    assert keys.prefix(keys.SYSTEM_CONSUMER_KEYS, system="kafka") == "systems.kafka.consumer."
    assert keys.prefix(keys.LOG_KEYS, system="log") + "path" == keys.LOG_PATH.key(system="log")
    assert keys.STORE_CHANGELOG.glob == "stores.*.changelog"
    assert keys.STREAM_PARTITIONS.glob == "streams.*.partitions"


def test_a_stream_property_is_read_from_the_key_a_user_set_and_named_by_it():
    from samza_dagster.config import keys
    from samza_dagster.config.system_config import StreamConfig
    from samza_dagster.model import SystemStream

    orders = SystemStream("kafka", "orders")
    base = {"streams.o.samza.system": "kafka", "streams.o.samza.physical.name": "orders"}
    for key, expected_name in (
        ("streams.o.samza.bootstrap", "streams.o.samza.bootstrap"),
        ("systems.kafka.streams.orders.samza.bootstrap", "systems.kafka.streams.orders.samza.bootstrap"),
        ("systems.kafka.default.stream.samza.bootstrap", "systems.kafka.streams.orders.samza.bootstrap"),
    ):
        streams = StreamConfig(Config({**base, key: "maybe"}))
        assert streams.get_property(orders, keys.STREAM_BOOTSTRAP) == "maybe"
        assert streams.property_key(orders, keys.STREAM_BOOTSTRAP) == expected_name
        with pytest.raises(ConfigError, match=re.escape(f"config key {expected_name!r}")):
            streams.is_bootstrap(orders)
