"""What a job's coordinator stream says about its configuration, from Dagster's side.

Two kinds of writers share the stream. The job itself writes it at every start (the submission
of its whole config, source ``job-submission``) and while it runs (``job-coordinator``); those
messages describe what a run already applies. Everybody else — ``samza-dagster
coordinator-stream-writer``, the ``coordinator_stream`` resource, another Samza tool — writes a
*change* to the job's configuration. The sensor reacts to changes only, and a launch reports
the changes its submission overwrites.

A delete carries no source on the wire (its value is null). It counts as a change when it
reverts a key the deployed config has (the key falls back to the .properties value); a delete
of a key the deployed config lacks is a submission dropping a key the user removed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.coordinator.job_coordinator import SOURCE as COORDINATOR_SOURCE
from samza_dagster.coordinator.stream.messages import SET_CONFIG, CoordinatorStreamMessage
from samza_dagster.coordinator.stream.reader_writer import CoordinatorStreamReader
from samza_dagster.coordinator.stream.state import CoordinatorStreamState
from samza_dagster.coordinator.stream.submission import SOURCE as SUBMISSION_SOURCE
from samza_dagster.system.errors import StreamNotFoundError

#: sources of the messages a job writes about itself
OWN_SOURCES = frozenset({SUBMISSION_SOURCE, COORDINATOR_SOURCE})

Messages = Sequence[tuple[str, CoordinatorStreamMessage]]


def is_external_change(message: CoordinatorStreamMessage, deployed: Mapping[str, str]) -> bool:
    """A set-config (or its delete) that did not come from the job itself."""
    if message.type != SET_CONFIG:
        return False
    if message.is_delete:
        return message.key in deployed
    return message.source not in OWN_SOURCES


@dataclass
class ConfigChanges:
    """The effect of the messages after a cursor on the job's effective config (the deployed
    config overlaid with the stream)."""

    changed: list[str] = field(default_factory=list)
    #: offset of the last new message that changed one of ``changed`` (the change's identity)
    trigger: str | None = None
    #: keys whose effective value differs from the deployed config, with the stream's value
    overrides: dict[str, str] = field(default_factory=dict)
    values: dict[str, str | None] = field(default_factory=dict)


def changes_after(
    messages: Messages, cursor: str | None, deployed: Mapping[str, str], compare: Callable[[str, str], int]
) -> ConfigChanges:
    """What the external messages at or after ``cursor`` (all of them when None) changed."""
    before, after = CoordinatorStreamState(), CoordinatorStreamState()
    touched: list[tuple[str, str]] = []
    for offset, message in messages:
        is_new = cursor is None or compare(offset, cursor) >= 0
        if not is_new:
            before.apply(message, offset)
        elif is_external_change(message, deployed):
            touched.append((offset, message.key))
        after.apply(message, offset)
    old, new = {**deployed, **before.config}, {**deployed, **after.config}
    changed = sorted({key for _, key in touched if old.get(key) != new.get(key)})
    keys = set(changed)
    trigger = next((offset for offset, key in reversed(touched) if key in keys), None)
    overrides = {k: v for k, v in after.config.items() if deployed.get(k) != v}
    return ConfigChanges(changed, trigger, overrides, {k: new.get(k) for k in changed})


@dataclass(frozen=True)
class Overwrite:
    key: str
    stream_value: str
    launch_value: str | None
    source: str
    offset: str


def overwritten_by_launch(messages: Messages, launch: Mapping[str, str]) -> list[Overwrite]:
    """Keys whose current value in the stream an operator set from outside the job, and that a
    launch with ``launch`` as its config would replace. A value set from outside stays the
    operator's through the job's own re-submissions of it (every run submits its whole config);
    it stops being one when a submission replaced it (an explicit override) or it was deleted."""
    current: dict[str, str | None] = {}
    external: dict[str, tuple[str, CoordinatorStreamMessage]] = {}
    for offset, message in messages:
        if message.type != SET_CONFIG:
            continue
        current[message.key] = None if message.is_delete else message.config_value
        if not message.is_delete and message.source not in OWN_SOURCES:
            external[message.key] = (offset, message)
    out = []
    for key, (offset, message) in sorted(external.items()):
        value = message.config_value
        if value is not None and current.get(key) == value and launch.get(key) != value:
            out.append(Overwrite(key, value, launch.get(key), message.source or "unknown", offset))
    return out


#: run tag naming the coordinator-stream keys a launch's explicit overrides replaced
REPLACED_TAG = "samza/replaced-coordinator-config"


def keep_coordinator_stream_config(
    context: dg.AssetExecutionContext, cfg: Config, job_name: str, explicit: Mapping[str, str]
) -> Config:
    """The config a launch submits. Values set on the coordinator stream from outside the job (a
    reconfiguration with ``coordinator-stream-writer`` or the resource) are kept over the
    .properties, so a relaunch — a queued run starting after Terminate — never silently reverts a
    live reconfiguration. Only a key the launch overrides explicitly (``explicit``: the run
    config's ``overrides``) replaces the stream's value; that is logged as a warning and tagged on
    the run (``samza/replaced-coordinator-config``)."""
    try:
        with CoordinatorStreamReader(cfg) as reader:
            messages, _ = reader.read(None)
    except StreamNotFoundError:
        return cfg
    except Exception as exc:  # noqa: BLE001 - the job's own start reports a stream it cannot use
        context.log.warning(f"job {job_name}: cannot read its coordinator stream before the launch: {exc}")
        return cfg
    differing = overwritten_by_launch(messages, cfg.to_dict())
    kept = [o for o in differing if o.key not in explicit]
    replaced = [o for o in differing if o.key in explicit]
    if kept:
        context.log.info(
            f"job {job_name}: keeping the coordinator stream's "
            + "; ".join(
                f"{o.key}={o.stream_value!r} (set by {o.source} at offset {o.offset}; the deployed config "
                f"has {o.launch_value!r})"
                for o in kept
            )
            + ". Override a key in the launch's config to replace it"
        )
        cfg = cfg.with_overrides({o.key: o.stream_value for o in kept})
    if replaced:
        detail = "; ".join(
            f"{o.key}: {o.stream_value!r} (set by {o.source} at offset {o.offset}) -> {o.launch_value!r}"
            for o in replaced
        )
        context.log.warning(f"job {job_name}: this launch's overrides replace coordinator stream values — {detail}")
        context.instance.add_run_tags(context.run.run_id, {REPLACED_TAG: ",".join(o.key for o in replaced)[:1000]})
    return cfg
