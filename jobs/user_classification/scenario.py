"""user_classification end to end — SAMZA-2's story in four steps:

1. history: ``size`` past signups are classified with strategy ``ip`` (a bounded run);
2. the strategy changes to ``ip+language`` on the job's coordinator stream (the coordinator
   stream writer) — the run config of the next run is what the stream says changed after the
   cursor, as the Dagster sensor computes it;
3. the reprocessing backfill re-sends every past user into ``reclassify_requests``: on Spark
   (``resend_to_batch_stream``) or, in the thread-runner tests, with a plain producer;
4. the reconfigured job runs while new users keep signing up live (one request every
   1/``live_rate`` s, until the flood is drained and at least ``min_live`` were sent, then
   ``min_live // 2`` more once it is: the signups after the flood are what the ones during it are
   told apart from); it is then stopped gracefully. Latencies come from the outputs, per source
   stream.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from jobs.demo.runner import run_job
from jobs.stream_helpers import create_streams, message_count, produce, read_stream
from jobs.user_classification.classifier import classify
from jobs.user_classification.data import signups
from samza_dagster.config import Config
from samza_dagster.coordinator.stream.messages import SET_CONFIG
from samza_dagster.coordinator.stream.reader_writer import CoordinatorStreamReader
from samza_dagster.system import OutgoingMessageEnvelope, SystemStream, system_factory

CONFIG_PATH = Path(__file__).with_name("user_classification.properties")
REALTIME, BATCH, OUTPUT = "user_signups", "reclassify_requests", "user_country"
PARTITIONS = 2
STRATEGY_KEY = "app.classifier.strategy"
#: live signups sent within this long may still be in the job when the flood is judged over
LIVE_IN_FLIGHT_S = 0.1


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by nearest rank; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, int(round(q / 100 * len(ordered) + 0.5)) - 1))
    return float(ordered[rank])


@dataclass
class LatencySplit:
    count: int
    p50_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def of(cls, values: list[float]) -> LatencySplit:
        return cls(
            len(values),
            round(percentile(values, 50), 2),
            round(percentile(values, 99), 2),
            round(max(values), 2) if values else 0.0,
        )


@dataclass
class UserClassificationReport:
    history_users: int
    first_strategy: str
    new_strategy: str
    reconfiguration: dict[str, str]
    backfill_sent: int
    backfill_engine: str
    live_signups: int
    outputs: int
    reclassified: int
    countries_changed: int
    wrong_country: int
    realtime: LatencySplit
    #: real-time requests processed while the batch flood was still being worked off
    realtime_during_flood: LatencySplit
    batch: LatencySplit
    messages_processed: int
    elapsed_s: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_config(log_root: Path | str, **overrides: str) -> Config:
    return Config.from_properties(CONFIG_PATH).with_overrides({"systems.log.log.path": str(log_root), **overrides})


def _encode(users: list[dict]) -> list[tuple[bytes, bytes, None]]:
    return [(u["user_id"].encode(), json.dumps(u).encode(), None) for u in users]


def reconfigure(config: Config, key: str, value: str) -> dict[str, str]:
    """Write ``key=value`` to the job's coordinator stream (as ``samza-dagster
    coordinator-stream-writer`` does) and return the overrides the next run gets: the set-config
    messages after the cursor taken just before — what the coordinator-stream sensor requests."""
    from samza_dagster.coordinator import run_coordinator_stream_writer
    from samza_dagster.coordinator.stream.reader_writer import create_coordinator_stream

    create_coordinator_stream(config)
    with CoordinatorStreamReader(config) as reader:
        _, cursor = reader.read(None)
    run_coordinator_stream_writer(config, "set-config", key, value)
    overrides: dict[str, str] = {}
    with CoordinatorStreamReader(config) as reader:
        messages, _ = reader.read(cursor)
    for _, message in messages:
        if message.type == SET_CONFIG and not message.is_delete:
            overrides[message.key] = str(message.values.get("value"))
    return overrides


def backfill_with_spark(spark: Any, config: Config) -> int:
    """Re-send every past signup into the batch stream (a Spark job over the samza data source)."""
    from samza_dagster.spark import resend_to_batch_stream
    from samza_dagster.spark.datasource import read_options

    df = spark.read.format("samza").options(**read_options("log", REALTIME, dict(config.items()))).load()
    # no timestamp column: each request is stamped when re-sent, so batch latency is queueing time
    sent = resend_to_batch_stream(
        df.select("key", "value"), system="log", stream=BATCH, config=dict(config.items()), key_column="key"
    )
    return int(sent["total"])


def backfill_locally(config: Config) -> int:
    """The same re-send with a plain consumer and producer (tests: no Spark session)."""
    return produce(config, BATCH, [(r.key, r.value, None) for r in read_stream(config, REALTIME)], source="backfill")


class LiveSignups(threading.Thread):
    """New users signing up while the reconfigured job runs: one request every 1/rate s, flushed
    at once (a real-time producer), until ``done()`` and at least ``minimum`` were sent, and then
    ``after`` more (the quiet time after the flood; it stopped at once, so every live signup was
    one "served during the backfill flood", and the report's two rows read the same)."""

    def __init__(
        self, config: Config, first_id: int, rate: float, minimum: int, done: Any, seed: int, after: int = 0
    ) -> None:
        super().__init__(name="live-signups", daemon=True)
        self.config, self.rate, self.minimum, self.done = config, rate, minimum, done
        self.after = after
        self.users = signups(10**9, seed=seed, start_id=first_id)
        self.sent: list[dict] = []
        #: how many had been sent when ``done()`` was first seen true
        self.sent_at_done: int | None = None
        self.error: BaseException | None = None

    def _more(self) -> bool:
        if len(self.sent) < self.minimum:
            return True
        if self.sent_at_done is None:
            if not self.done():
                return True
            self.sent_at_done = len(self.sent)
        return len(self.sent) < self.sent_at_done + self.after

    def run(self) -> None:
        try:
            producer = system_factory(self.config, "log").get_producer("log", self.config)
            producer.register("live")
            producer.start()
            target = SystemStream("log", REALTIME)
            interval = 1.0 / self.rate
            next_at = time.monotonic()
            try:
                while self._more():
                    user = next(self.users)
                    producer.send(
                        "live", OutgoingMessageEnvelope(target, json.dumps(user).encode(), key=user["user_id"].encode())
                    )
                    producer.flush("live")
                    self.sent.append(user)
                    next_at += interval
                    time.sleep(max(0.0, next_at - time.monotonic()))
            finally:
                producer.stop()
        except BaseException as exc:  # noqa: BLE001 - reported by the scenario
            self.error = exc


def run_scenario(
    log_root: Path | str,
    *,
    size: int = 4000,
    runner: str = "thread",
    spark: Any = None,
    live_rate: float = 200.0,
    min_live: int = 200,
    seed: int = 3,
    **overrides: str,
) -> UserClassificationReport:
    base = load_config(log_root, **overrides)
    create_streams(base, {REALTIME: PARTITIONS, BATCH: PARTITIONS, OUTPUT: PARTITIONS})
    history = list(signups(size, seed=seed))
    produce(base, REALTIME, _encode(history))
    first_strategy = base.get_str(STRATEGY_KEY, "ip") or "ip"
    bounded = {f"systems.log.streams.{s}.samza.bounded": "true" for s in (REALTIME, BATCH)}
    out1 = run_job(base.with_overrides(bounded), runner=runner, spark=spark)

    new_strategy = "ip+language" if first_strategy == "ip" else "ip"
    changes = reconfigure(base, STRATEGY_KEY, new_strategy)
    sent = backfill_with_spark(spark, base) if spark is not None else backfill_locally(base)
    config = base.with_overrides(changes)

    expected_total = size + sent
    # the flood is over when every output is there: the history, the batch and the live signups
    # sent so far (counting the outputs alone let the live ones stand in for batch ones not done) —
    # but for the live signups still on their way through the job: its latency (~10 ms on the log)
    # is longer than the 5 ms between two of them, so waiting for the last one's output waited for a
    # gap that rarely came, and the demo ran for minutes (once past its 300 s limit)
    in_flight = max(1, int(live_rate * LIVE_IN_FLIGHT_S))
    batch_done = lambda: message_count(base, OUTPUT) >= size + sent + len(live.sent) - in_flight  # noqa: E731 - polled by the producer
    live = LiveSignups(base, size, live_rate, min_live, batch_done, seed + 1, after=min_live // 2)
    started = threading.Event()

    def stop_when() -> bool:
        if not started.is_set() and message_count(base, OUTPUT) > size:
            live.start()  # the job is processing: from now on requests meet a running job
            started.set()
        return (
            started.is_set() and not live.is_alive() and message_count(base, OUTPUT) >= expected_total + len(live.sent)
        )

    out2 = run_job(config, runner=runner, spark=spark, stop_when=stop_when)
    if live.error is not None:
        raise live.error

    outputs = [json.loads(r.value) for r in read_stream(base, OUTPUT)]
    phase2 = outputs[0:0] + [o for o in outputs if o["strategy"] == new_strategy]
    batch = [o for o in phase2 if o["source"] == "batch"]
    realtime = [o for o in phase2 if o["source"] == "realtime"]
    flood_end = max((o["processed_ms"] for o in batch), default=0.0)
    users = {u["user_id"]: u for u in (*history, *live.sent)}
    first = {o["user_id"]: o["country"] for o in outputs if o["strategy"] == first_strategy}
    wrong = sum(1 for o in outputs if o["country"] != classify(users[o["user_id"]], o["strategy"]))
    return UserClassificationReport(
        history_users=size,
        first_strategy=first_strategy,
        new_strategy=new_strategy,
        reconfiguration=changes,
        backfill_sent=sent,
        backfill_engine="spark" if spark is not None else "producer",
        live_signups=len(live.sent),
        outputs=len(outputs),
        reclassified=len(batch),
        countries_changed=sum(1 for o in batch if first.get(o["user_id"]) != o["country"]),
        wrong_country=wrong,
        realtime=LatencySplit.of([o["latency_ms"] for o in realtime]),
        realtime_during_flood=LatencySplit.of([o["latency_ms"] for o in realtime if o["processed_ms"] <= flood_end]),
        batch=LatencySplit.of([o["latency_ms"] for o in batch]),
        messages_processed=out1.messages_processed + out2.messages_processed,
        elapsed_s=out1.elapsed_s + out2.elapsed_s,
    )
