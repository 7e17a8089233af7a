"""Config: typed getters, .properties parsing, overrides and the typed views."""

from __future__ import annotations

import pytest

from samza_dagster.config import Config, ConfigError, parse_overrides, parse_properties
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.secrets import mask_config
from samza_dagster.config.system_config import StorageConfig, StreamConfig
from samza_dagster.config.task_config import TaskConfig
from samza_dagster.system import SystemStream


def test_config_is_an_immutable_string_mapping():
    config = Config({"a": 1, "b": True, "c": "x"})
    assert dict(config) == {"a": "1", "b": "true", "c": "x"}
    with pytest.raises(TypeError):
        config["a"] = "2"  # type: ignore[index]


def test_typed_getter_error_names_key_and_value():
    config = Config({"task.window.ms": "soon", "flag": "perhaps"})
    with pytest.raises(ConfigError, match=r"'task.window.ms'.*'soon'") as info:
        config.get_int("task.window.ms")
    assert info.value.key == "task.window.ms"
    with pytest.raises(ConfigError, match="'flag'.*true or false"):
        config.get_bool("flag")


def test_missing_required_key_is_named():
    with pytest.raises(ConfigError, match="job.name"):
        _ = JobConfig(Config({})).name


def test_subset_strips_prefix():
    config = Config({"systems.k.consumer.x": "1", "systems.k.producer.y": "2", "job.name": "j"})
    assert dict(config.subset("systems.k.")) == {"consumer.x": "1", "producer.y": "2"}
    assert dict(config.subset("systems.k.consumer.", strip_prefix=False)) == {"systems.k.consumer.x": "1"}


def test_properties_parsing_handles_comments_separators_continuations_and_escapes():
    text = "\n".join(
        [
            "# comment",
            "! also a comment",
            "job.name=my-job",
            "job.id : 7",
            "task.inputs log.a,\\",
            "    log.b",
            "path=C\\:\\\\data\\tx",
            "unicode=\\u00e9t\\u00e9",
            "empty=",
        ]
    )
    props = parse_properties(text)
    assert props == {
        "job.name": "my-job",
        "job.id": "7",
        "task.inputs": "log.a,log.b",
        "path": "C:\\data\tx",
        "unicode": "été",
        "empty": "",
    }


def test_from_properties_and_overrides(tmp_path):
    path = tmp_path / "job.properties"
    path.write_text("job.name=a\njob.container.count=2\n")
    config = Config.from_properties(path).with_overrides(parse_overrides(["job.container.count=3"]))
    assert JobConfig(config).container_count == 3
    with pytest.raises(ConfigError, match="key=value"):
        parse_overrides(["no-equals-sign"])
    with pytest.raises(ConfigError, match="not found"):
        Config.from_properties(tmp_path / "missing.properties")


def test_job_config_defaults_and_choices():
    job = JobConfig(Config({"job.name": "j"}))
    assert (job.id, job.factory, job.container_count, job.default_system, job.grouper) == (
        "1",
        "spark",
        1,
        "log",
        "group-by-partition",
    )
    with pytest.raises(ConfigError, match="job.factory.class.*thread, process, spark"):
        _ = JobConfig(Config({"job.factory.class": "yarn"})).factory


def test_task_inputs_parse_and_reject_malformed_entries():
    assert TaskConfig(Config({"task.inputs": "log.a, kafka.b.c"})).inputs == [
        SystemStream("log", "a"),
        SystemStream("kafka", "b.c"),
    ]
    with pytest.raises(ConfigError, match="task.inputs.*system.stream"):
        _ = TaskConfig(Config({"task.inputs": "nodot"})).inputs


def test_stream_properties_by_stream_id_win_over_system_form():
    config = Config(
        {
            "streams.signups.samza.system": "kafka",
            "streams.signups.samza.physical.name": "user-signups",
            "streams.signups.samza.priority": "2",
            "systems.kafka.streams.user-signups.samza.priority": "1",
            "systems.kafka.streams.reclassify.samza.priority": "0",
            "systems.kafka.streams.codes.samza.bootstrap": "true",
            "systems.kafka.default.stream.samza.offset.default": "upcoming",
        }
    )
    streams = StreamConfig(config)
    assert streams.priority(SystemStream("kafka", "user-signups")) == 2
    assert streams.priority(SystemStream("kafka", "reclassify")) == 0
    assert streams.is_bootstrap(SystemStream("kafka", "codes"))
    assert not streams.is_bootstrap(SystemStream("kafka", "reclassify"))
    assert streams.offset_default(SystemStream("kafka", "other")) == "upcoming"


def test_non_integer_priority_names_its_key():
    config = Config({"systems.log.streams.s.samza.priority": "high"})
    with pytest.raises(ConfigError, match="systems.log.streams.s.samza.priority.*'high'"):
        StreamConfig(config).priority(SystemStream("log", "s"))


def test_storage_config():
    config = Config(
        {
            "stores.counts.factory": "rocksdb",
            "stores.counts.changelog": "log.counts-changelog",
            "stores.t.changelog": "bare",
            "stores.t.side.inputs": "a,b",
        }
    )
    storage = StorageConfig(config)
    assert storage.store_names() == ["counts", "t"]
    assert storage.changelog("counts", "x") == SystemStream("log", "counts-changelog")
    assert storage.changelog("t", "kafka") == SystemStream("kafka", "bare")
    assert storage.side_inputs("t") == ["a", "b"]


def test_secrets_are_masked():
    masked = mask_config(
        {"systems.k.consumer.sasl.password": "p", "systems.k.producer.ssl.key.password": "q", "job.name": "j"}
    )
    assert masked == {
        "systems.k.consumer.sasl.password": "********",
        "systems.k.producer.ssl.key.password": "********",
        "job.name": "j",
    }
