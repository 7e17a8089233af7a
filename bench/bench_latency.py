"""B12: end-to-end latency at a steady rate — input written → output readable downstream.

A pass-through job (one container, 4 tasks, the default config: commit every 60 s) runs in its
own process on the embedded log or on the Kafka broker of the tests. A driver writes messages at a
steady 1,000 msgs/s, each carrying the wall-clock time just before it was handed to the producer
(the log: a write and commit per message; Kafka: librdkafka with ``linger.ms=0``), and a
downstream consumer of the output stream (the system's own consumer for the log; a librdkafka
consumer that asks the broker to wait at most 10 ms for Kafka) records, per message, the time it
was read minus that stamp. Messages sent before the job's first output was read are warm-up and
not counted. Reported: p50, p99 and the largest latency; every message sent in the measured
window must come out.

    python -m bench --only B12 --repetitions 3
"""

from __future__ import annotations

import multiprocessing
import struct
import tempfile
import threading
import time
from typing import Any

from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.task.api import InitableTask, StreamTask

RATE = 1000
PARTITIONS = 4
STAMP = struct.Struct("<dq")  # send time (s since the epoch), sequence number
INPUT, OUTPUT = "b12-in", "b12-out"


class PassThroughTask(StreamTask, InitableTask):
    """Sends every message on, unchanged, to ``bench.output.system``.``bench.output.stream``."""

    def init(self, context):
        cfg = context.config
        self.out = SystemStream(cfg.get_str("bench.output.system"), cfg.get_str("bench.output.stream"))

    def process(self, envelope, collector, coordinator):
        collector.send(OutgoingMessageEnvelope(self.out, envelope.message))


def _job_config(system: str, system_keys: dict[str, str]) -> dict[str, str]:
    return {
        "job.name": "b12",
        "job.default.system": system,
        f"systems.{system}.samza.msg.serde": "bytes",
        f"systems.{system}.samza.offset.default": "oldest",  # the driver's first messages are not skipped
        "task.inputs": f"{system}.{INPUT}",
        "task.class": "bench.bench_latency:PassThroughTask",
        "bench.output.system": system,
        "bench.output.stream": OUTPUT,
        **system_keys,
    }


def _run_job(config: dict[str, str], stop) -> None:
    """The engine's process: one container until ``stop`` is set."""
    from samza_dagster.config import Config
    from samza_dagster.container import SamzaContainer
    from samza_dagster.coordinator.model_builder import build_job_model

    container = SamzaContainer("0", build_job_model(Config(config)).model)
    threading.Thread(target=lambda: (stop.wait(), container.stop()), daemon=True).start()
    container.run()


class _Log:
    """Driver side on the embedded log: streams, a producer writing each message at once, the
    system's own consumer downstream."""

    def __init__(self, root: str) -> None:
        from samza_dagster.config import Config
        from samza_dagster.system import StreamSpec
        from samza_dagster.system.factories import system_factory

        self.keys = {"systems.log.samza.factory": "log", "systems.log.log.path": root}
        # the driver's own writes skip the fsync per message (WAL, synchronous=NORMAL) to keep the
        # rate steady; the job runs with the default (FULL)
        self.config = Config(dict(self.keys, **{"systems.log.log.synchronous": "NORMAL"}))
        self.factory = system_factory(self.config, "log")
        admin = self.factory.get_admin("log", self.config)
        for stream in (INPUT, OUTPUT):
            admin.create_stream(StreamSpec(stream, stream, "log", PARTITIONS))
        self.producer = self.factory.get_producer("log", self.config)
        self.producer.register("b12")
        self.producer.start()
        self.input = SystemStream("log", INPUT)

    def send(self, value: bytes, seq: int) -> None:
        self.producer.send("b12", OutgoingMessageEnvelope(self.input, value, partition=seq % PARTITIONS))
        self.producer.flush("b12")

    def reader(self):
        from samza_dagster.model import SystemStreamPartition

        consumer = self.factory.get_consumer("log", self.config)
        ssps = [SystemStreamPartition("log", OUTPUT, p) for p in range(PARTITIONS)]
        for ssp in ssps:
            consumer.register(ssp, "0")
        consumer.start()

        def read() -> list[bytes]:
            return [e.message for batch in consumer.poll(ssps, 0.05).values() for e in batch]
        return read, consumer.stop

    def close(self) -> None:
        self.producer.stop()


class _Kafka:
    """Driver side on Kafka: topics on the tests' broker, librdkafka producer and consumer."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Producer

        from bench.kafka_util import create_topics

        self.bootstrap = bootstrap
        create_topics(bootstrap, [INPUT, OUTPUT], PARTITIONS)
        self.keys = {"systems.kafka.samza.factory": "kafka", "systems.kafka.consumer.bootstrap.servers": bootstrap}
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})

    def send(self, value: bytes, seq: int) -> None:
        self.producer.produce(INPUT, value, partition=seq % PARTITIONS)
        self.producer.poll(0)

    def reader(self):
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "b12-reader",
                             "enable.auto.commit": False, "fetch.wait.max.ms": 10})
        consumer.assign([TopicPartition(OUTPUT, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])

        def read() -> list[bytes]:
            return [m.value() for m in consumer.consume(500, 0.05) if m.error() is None]
        return read, consumer.close

    def close(self) -> None:
        self.producer.flush(10)


def child_latency(system: str, seconds: float, rate: int = RATE, bootstrap: str = "") -> dict[str, Any]:
    """One repetition: the job in its own process, the driver here; latencies in ms."""
    root = tempfile.mkdtemp(prefix="b12-")
    driver = _Log(root) if system == "log" else _Kafka(bootstrap)
    spawn = multiprocessing.get_context("spawn")
    stop = spawn.Event()
    job = spawn.Process(target=_run_job, args=(_job_config(system, driver.keys), stop), daemon=True)
    job.start()
    read, close_reader = driver.reader()
    received: dict[int, float] = {}
    first_output = threading.Event()
    reading = threading.Event()
    reading.set()

    def downstream() -> None:
        while reading.is_set():
            for value in read():
                sent, seq = STAMP.unpack(value)
                received[seq] = (time.time() - sent) * 1000.0
                first_output.set()

    reader = threading.Thread(target=downstream, daemon=True)
    reader.start()
    try:
        seq, interval = 0, 1.0 / rate
        t0 = time.perf_counter()
        measured_from = None
        deadline = None
        while True:
            now = time.perf_counter()
            if measured_from is None and first_output.is_set():
                measured_from, deadline = seq, now + seconds
            if deadline is not None and now >= deadline:
                break
            if measured_from is None and now - t0 > 120:
                raise RuntimeError(f"B12 on {system}: no output 120 s after the first input")
            driver.send(STAMP.pack(time.time(), seq), seq)
            seq += 1
            delay = t0 + seq * interval - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        achieved = (seq - measured_from) / (time.perf_counter() - (deadline - seconds))
        wait_until = time.monotonic() + 10
        while time.monotonic() < wait_until and any(s not in received for s in range(measured_from, seq)):
            time.sleep(0.05)
    finally:
        reading.clear()
        reader.join(5)
        close_reader()
        driver.close()
        stop.set()
        job.join(60)
        if job.is_alive():
            job.kill()
    latencies = sorted(received[s] for s in range(measured_from, seq) if s in received)
    missing = (seq - measured_from) - len(latencies)
    if missing:
        raise RuntimeError(f"B12 on {system}: {missing} of {seq - measured_from} measured messages never came out")

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))]

    return {"messages": len(latencies), "rate": achieved, "p50_ms": pct(0.50), "p99_ms": pct(0.99),
            "max_ms": latencies[-1]}


def b12_section(repetitions: int, seconds: float, log=print):
    from bench.harness import Section, alternate, column, fmt, isolated, median
    from bench.kafka_util import start_broker

    t0 = time.perf_counter()
    broker = start_broker()
    try:
        def on(system: str):
            def measure(rep: int) -> dict[str, Any]:
                if system == "kafka":  # fresh topics per repetition: a new broker would cost more
                    return isolated("bench.bench_latency:child_kafka_fresh", bootstrap=broker.bootstrap_servers,
                                    seconds=seconds, rep=rep)
                return isolated("bench.bench_latency:child_latency", system="log", seconds=seconds)
            return measure

        runs = alternate(repetitions, {"log": on("log"), "kafka": on("kafka")}, log)
    finally:
        broker.stop()
    rows = []
    for system, label in (("log", "embedded log (`log`)"), ("kafka", "Kafka (`kafka.client=confluent`), tansu broker")):
        rs = runs[system]
        rows.append(f"| {label} | {fmt(column(rs, 'rate'))} | {fmt(column(rs, 'p50_ms'), '.1f')} | "
                    f"{fmt(column(rs, 'p99_ms'), '.1f')} | {fmt(column(rs, 'max_ms'), '.1f')} | "
                    f"{fmt(column(rs, 'messages'))} |")
    p99_log, p99_kafka = median(column(runs["log"], "p99_ms")), median(column(runs["kafka"], "p99_ms"))
    body = (f"A pass-through job (1 container, {PARTITIONS} input and output partitions, default config: commit "
            f"every 60 s, `log.linger.ms` 5, librdkafka's `linger.ms` 5) in its own process; the driver writes "
            f"{RATE:,} msgs/s for {seconds:.0f} s after the job's first output, each stamped with the time just "
            "before it was handed to the producer (log: one write and commit per message; Kafka: librdkafka, "
            "`linger.ms=0`); a downstream consumer of the output records read time − stamp per message (log: "
            "the system's consumer; Kafka: librdkafka with `fetch.wait.max.ms=10`). Every measured message "
            f"came out. Median (min–max) of {repetitions} repetitions, log and Kafka alternating.\n\n"
            "| system | msgs/s sent | p50, ms | p99, ms | max, ms | messages measured |\n"
            "|---|---:|---:|---:|---:|---:|\n" + "\n".join(rows) + "\n")
    met = p99_log < 100 and p99_kafka < 100
    return Section(key="B12", title="end-to-end latency at a steady 1,000 msgs/s",
                   command=f"python -m bench --only B12 --repetitions {repetitions}", body=body,
                   result=f"p99 {p99_log:.1f} ms on the log, {p99_kafka:.1f} ms on Kafka",
                   target="p99 < 100 ms on the log and on Kafka with the default config", met=met,
                   why="" if met else "Why: see *Profiles* below.", elapsed_s=time.perf_counter() - t0)


def child_kafka_fresh(bootstrap: str, seconds: float, rep: int) -> dict[str, Any]:
    """child_latency on Kafka with topics of this repetition's own (names suffixed)."""
    global INPUT, OUTPUT
    INPUT, OUTPUT = f"b12-in-{rep}", f"b12-out-{rep}"
    return child_latency("kafka", seconds, bootstrap=bootstrap)


if __name__ == "__main__":
    import sys

    print(child_latency(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 10.0,
                        bootstrap=sys.argv[3] if len(sys.argv) > 3 else ""))
