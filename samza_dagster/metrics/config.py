"""The reporters a job configures, with Samza's keys:

``metrics.reporters`` (comma-separated names); per name ``metrics.reporter.<name>.class``
(``snapshot``, ``prometheus``, Samza's ``MetricsSnapshotReporterFactory`` class name, or a
``module:Class`` of one's own), ``metrics.reporter.<name>.stream`` (``system.stream``: where a
snapshot reporter writes, where the Prometheus exposition reads) and
``metrics.reporter.<name>.interval`` (seconds between snapshots; Samza's default, 60).

The form snapshots are written in follows the metrics stream's message serde, as Samza's
``MetricsSnapshotReporterFactory.getSerde`` finds it (:func:`snapshot_form`): the stream's
``samza.msg.serde``, else the system's; a serde registered with Samza's
``org.apache.samza.serializers.MetricsSnapshotSerdeV2Factory`` class writes ``v2``, anything else
(Samza's ``MetricsSnapshotSerdeFactory``, ``json``, nothing) plain JSON.

Everything is checked at once by :func:`metrics_config` — the config pre-flight calls it — and
each error is a ConfigError naming its key, before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.system_config import SystemConfig
from samza_dagster.metrics.snapshot import JSON_FORM, V2_FORM
from samza_dagster.model import SystemStream

REPORTERS_KEY = keys.METRICS_REPORTERS.name
SNAPSHOT = "snapshot"
PROMETHEUS = "prometheus"
#: Samza's factory class names, accepted for configs carried over from a Samza job
SAMZA_CLASSES = {
    "org.apache.samza.metrics.reporter.MetricsSnapshotReporterFactory": SNAPSHOT,
}
DEFAULT_INTERVAL_S = float(keys.METRICS_REPORTER_INTERVAL.default)


@dataclass(frozen=True, slots=True)
class ReporterConfig:
    """One configured reporter: ``kind`` is ``snapshot``, ``prometheus`` or ``custom`` (then
    ``class_path`` is its ``module:Class``); ``stream`` is set for snapshot and Prometheus."""

    name: str
    kind: str
    class_path: str | None
    stream: SystemStream | None
    interval_s: float


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    reporters: tuple[ReporterConfig, ...]

    @property
    def snapshot_streams(self) -> dict[SystemStream, float]:
        """Every stream containers write snapshots to, with its interval: the snapshot
        reporters' and the Prometheus reporters' (a Prometheus reporter alone still needs its
        containers' snapshots on its stream; two reporters on one stream write it once, at the
        shorter interval)."""
        streams: dict[SystemStream, float] = {}
        for reporter in self.reporters:
            if reporter.stream is not None:
                streams[reporter.stream] = min(reporter.interval_s, streams.get(reporter.stream, reporter.interval_s))
        return streams

    @property
    def prometheus(self) -> ReporterConfig | None:
        """The (first) Prometheus reporter: the job coordinator serves its stream at ``/metrics``."""
        return next((r for r in self.reporters if r.kind == PROMETHEUS), None)

    @property
    def custom(self) -> tuple[ReporterConfig, ...]:
        return tuple(r for r in self.reporters if r.kind == "custom")


def metrics_config(config: Config) -> MetricsConfig:
    """The reporters of ``config``; a ConfigError naming the key for the first one that is wrong."""
    names = config.get_list(REPORTERS_KEY, [])
    if len(set(names)) != len(names):
        raise ConfigError(f"config key {REPORTERS_KEY!r} names a reporter twice: {', '.join(names)}", key=REPORTERS_KEY)
    parsed = [_reporter(config, name) for name in names]
    snapshot_streams = [r.stream for r in parsed if r.kind == SNAPSHOT]
    reporters = []
    for reporter in parsed:
        if reporter.kind == PROMETHEUS and reporter.stream is None:
            key = keys.METRICS_REPORTER_STREAM.key(name=reporter.name)
            if len(set(snapshot_streams)) != 1:
                raise ConfigError(
                    f"config key {key!r} is not set: a prometheus reporter reads the containers' snapshots from "
                    f"a metrics stream; name it (system.stream), or configure exactly one snapshot reporter "
                    f"whose stream it then reads",
                    key=key,
                )
            reporter = ReporterConfig(reporter.name, PROMETHEUS, None, snapshot_streams[0], reporter.interval_s)
        reporters.append(reporter)
    return MetricsConfig(tuple(reporters))


def _reporter(config: Config, name: str) -> ReporterConfig:
    class_key = keys.METRICS_REPORTER_CLASS.key(name=name)
    raw_class = (config.get_str(class_key) or "").strip()
    if not raw_class:
        raise ConfigError(
            f"config key {class_key!r} is not set: reporter {name!r} is listed in {REPORTERS_KEY} and needs a class "
            f"({SNAPSHOT}, {PROMETHEUS}, or module:Class)",
            key=class_key,
        )
    kind = SAMZA_CLASSES.get(raw_class, raw_class)
    class_path = None
    if kind not in (SNAPSHOT, PROMETHEUS):
        if ":" not in kind:
            raise ConfigError(
                f"config key {class_key!r}: unknown metrics reporter class {raw_class!r}; known: {SNAPSHOT}, "
                f"{PROMETHEUS}, or module:Class",
                key=class_key,
            )
        from samza_dagster.serde.registry import load_class

        load_class(kind, class_key)  # raises a ConfigError naming the key when it does not import
        kind, class_path = "custom", raw_class
    return ReporterConfig(name, kind, class_path, _stream(config, name, kind), _interval(config, name))


def _stream(config: Config, name: str, kind: str) -> SystemStream | None:
    key = keys.METRICS_REPORTER_STREAM.key(name=name)
    raw = (config.get_str(key) or "").strip()
    if not raw:
        if kind == SNAPSHOT:
            raise ConfigError(
                f"config key {key!r} is not set: a snapshot reporter writes to a metrics stream (system.stream)",
                key=key,
            )
        return None
    system, dot, stream = raw.partition(".")
    if not dot or not system or not stream:
        raise ConfigError(f"config key {key!r} is {raw!r}; expected system.stream", key=key)
    systems = SystemConfig(config).system_names()
    if system not in systems and system != JobConfig(config).default_system:
        known = ", ".join(sorted(systems)) or "none"
        raise ConfigError(
            f"config key {key!r}: the metrics stream {raw!r} is on system {system!r}, which is not configured "
            f"({keys.SYSTEM_FACTORY.key(system=system)}; configured: {known})",
            key=key,
        )
    return SystemStream(system, stream)


def _interval(config: Config, name: str) -> float:
    key = keys.METRICS_REPORTER_INTERVAL.key(name=name)
    raw = config.get_str(key)
    if raw is None or not raw.strip():
        return DEFAULT_INTERVAL_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise ConfigError(f"config key {key!r} is {raw!r}; expected a positive number of seconds", key=key)
    return seconds


def snapshot_form(config: Config, stream: SystemStream) -> str:
    """``v2`` or ``json``: what the reporter writes to ``stream``, from its message serde as
    Samza's reporter chooses it (the stream's ``samza.msg.serde``, else the system's). Unlike
    Samza, whose reporter falls back to ``MetricsSnapshotSerdeV2`` when no serde is configured,
    an unconfigured stream gets plain JSON (docs/decisions.md, "Samza on the wire")."""
    from samza_dagster.serde.registry import SerdeRegistry

    serde = SerdeRegistry(config).msg_serde(stream)
    return V2_FORM if getattr(serde, "snapshot_form", None) == V2_FORM else JSON_FORM
