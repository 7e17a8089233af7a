"""Submitting a job's configuration to its coordinator stream (Samza design).

The submitted config is the job's whole configuration: keys whose value changed (or that are
new) are written as set-config messages, and keys the stream holds that the submitted config no
longer has are deleted — as Samza's JobRunner does, so the stream never keeps a key the user
removed from the .properties file. A submission that changes nothing writes nothing.

Some keys may only be set once for a stateful job (one with stores): changing them re-shuffles
input partitions among tasks or moves state between changelog partitions, which would mix the
state of different tasks. Such a change is refused unless ``force_reset`` is given, which accepts
it and also forgets the task → changelog partition assignments (the state is being reset).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.job_config import GROUPERS
from samza_dagster.config.system_config import StorageConfig
from samza_dagster.coordinator.stream.messages import SET_CHANGELOG, SET_CONFIG, CoordinatorStreamMessage
from samza_dagster.coordinator.stream.reader_writer import CoordinatorStreamReader, CoordinatorStreamWriter
from samza_dagster.coordinator.stream.state import CoordinatorStreamState

SOURCE = "job-submission"
GROUPER_KEY = keys.JOB_GROUPER.name
#: Keys (glob patterns) that may only be set once for a stateful job.
SET_ONCE_PATTERNS = (GROUPER_KEY, keys.STORE_CHANGELOG.glob, keys.STREAM_PARTITIONS.glob)
#: Defaults a missing set-once key stands for, so "unset" → "the default" is no change.
SET_ONCE_DEFAULTS = {GROUPER_KEY: GROUPERS[0]}


class SetOnceConfigChangeError(ConfigError):
    """A set-once key of a stateful job was changed; names the key and both values."""

    def __init__(self, key: str, old: str, new: str) -> None:
        super().__init__(
            f"config key {key!r} may only be set once for a stateful job: the coordinator stream holds "
            f"{old!r}, the new config has {new!r}. Changing it would mix the state of different tasks; "
            f"resubmit with force_reset (CLI: --force-reset) to reset the job's state assignment.",
            key=key,
        )
        self.old = old
        self.new = new


@dataclass
class SubmissionResult:
    """What a submission wrote: keys set, keys deleted, changelog assignments dropped."""

    changed: dict[str, str] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    reset_changelog: list[str] = field(default_factory=list)

    @property
    def wrote_anything(self) -> bool:
        return bool(self.changed or self.deleted or self.reset_changelog)


def is_set_once_key(key: str) -> bool:
    return any(fnmatch.fnmatchcase(key, pattern) for pattern in SET_ONCE_PATTERNS)


def is_stateful(config: Mapping[str, str]) -> bool:
    return bool(StorageConfig(Config(config)).store_names())


def check_set_once(old: Mapping[str, str], new: Mapping[str, str]) -> None:
    """Raise :class:`SetOnceConfigChangeError` for the first set-once key (sorted) whose value
    differs between two configs of a job that is stateful in either. Adding or removing such a
    key is not a change of an existing assignment, so only a differing value on both sides counts
    (after defaults)."""
    if not (is_stateful(old) or is_stateful(new)):
        return
    for key in sorted(set(old) | set(new)):
        if not is_set_once_key(key):
            continue
        old_value = old.get(key, SET_ONCE_DEFAULTS.get(key))
        new_value = new.get(key, SET_ONCE_DEFAULTS.get(key))
        if old_value is None or new_value is None:
            continue
        if old_value.strip() != new_value.strip():
            raise SetOnceConfigChangeError(key, old_value, new_value)


def plan_submission(
    state: CoordinatorStreamState, config: Mapping[str, str], *, force_reset: bool = False
) -> tuple[list[CoordinatorStreamMessage], SubmissionResult]:
    """The messages that bring the stream's config to ``config``. Pure: writes nothing."""
    old = state.config
    if state.config:  # a first submission has nothing to compare with
        if not force_reset:
            check_set_once(old, config)
    result = SubmissionResult()
    messages: list[CoordinatorStreamMessage] = []
    for key, value in config.items():
        if old.get(key) != value:
            messages.append(CoordinatorStreamMessage.set_config(SOURCE, key, value))
            result.changed[key] = value
    for key in old:
        if key not in config:
            messages.append(CoordinatorStreamMessage.delete(SOURCE, SET_CONFIG, key))
            result.deleted.append(key)
    if force_reset and state.config:
        try:
            check_set_once(old, config)
        except SetOnceConfigChangeError:
            for task_name in sorted(state.changelog):
                messages.append(CoordinatorStreamMessage.delete(SOURCE, SET_CHANGELOG, task_name))
                result.reset_changelog.append(task_name)
    return messages, result


def submit_job_config(config: Config, *, force_reset: bool = False) -> SubmissionResult:
    """Write ``config`` to the job's coordinator stream (creating it if needed); see the module
    docstring for what is written and what is refused."""
    writer = CoordinatorStreamWriter(config, SOURCE)
    try:
        with CoordinatorStreamReader(config) as reader:
            state, _ = reader.read_state()
        messages, result = plan_submission(state, config, force_reset=force_reset)
        writer.send(*messages)
    finally:
        writer.close()
    return result
