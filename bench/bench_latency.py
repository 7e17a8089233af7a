"""B12: end-to-end latency at a steady rate — input written → output readable downstream.

A pass-through job (one container, 4 tasks, the default config: commit every 60 s) runs in its
own process on the embedded log or on Apache Kafka (one local KRaft node, support/kafka_broker.py).
A driver writes messages at a steady 1,000 msgs/s, each carrying the wall-clock time just before
it was handed to the producer (the log: a write and commit per message; Kafka: librdkafka with
its default ``linger.ms`` of 5 ms), and a downstream consumer of the output stream (the system's
own consumer for the log; a librdkafka consumer for Kafka) records, per message, the time it was
read minus that stamp. Messages sent before the job's first output was read are warm-up and not counted.
Reported: p50, p99 and the largest latency; every message sent in the measured window must come
out.

What is the broker's and what is the engine's, on Kafka: the same readers also read the *input*
(one hop through the broker alone), and a *relay* — a bare librdkafka consume → produce loop in
its own process with the engine's librdkafka settings, no engine — takes the job's place in a
variant of its own: the floor for two hops through this broker from Python. Before the first
measurement the broker is warmed up (a freshly started JVM interprets and compiles its request
path for its first tens of seconds — longer on a loaded machine, where its compiler threads wait
for a CPU): rounds of one-hop traffic until a round's p99 is under :data:`WARM_P99_MS` or
:data:`BROKER_WARM_UP_S` have passed; the rounds' latencies are reported.

Also measured: what the job costs when nothing comes — the same job on the embedded log with
no input at all for ``--idle-seconds``, its CPU seconds per second (all its threads, after a
warm-up of :data:`IDLE_WARM_S`); and the CPU of the job on the log against the same job on Kafka
at 1,000 msgs/s (the log job's CPU over the Kafka job's, per repetition).

    python -m bench --only B12 --repetitions 5
"""

from __future__ import annotations

import multiprocessing
import os
import struct
import tempfile
import threading
import time
from typing import Any

from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.task.api import InitableTask, StreamTask

RATE = 1000
#: the downstream Kafka readers' broker-side fetch wait: the engine consumer's default (a Kafka
#: broker answers a waiting fetch as soon as data arrives, so this bounds only idle fetches)
READER_FETCH_WAIT_MS = 100
#: the driver's producer batches as librdkafka does by default (an upstream application's
#: producer): with linger.ms=0 each message was a produce request of its own, 1,000 a second,
#: and the loaded broker's one-hop p99 was 1.3 s against 0.2 s (docs/benchmarks.md, B12 profile)
DRIVER_LINGER_MS = 5
#: the broker's warm-up before the first measurement: rounds of WARM_ROUND_S of one-hop traffic
#: (1,000 msgs/s through the broker, no job) until a round's p99 is under WARM_P99_MS, for at most
#: BROKER_WARM_UP_S. Measured: a fresh broker's first 10 s had one-hop p50 1.3–2.8 s (load ~12),
#: 11–20 s in its first 5 s at load ~25, its JIT compiler threads still busy after 20 s
BROKER_WARM_UP_S = 120.0
WARM_ROUND_S = 10.0
WARM_P99_MS = 50.0
#: how long after the measured window every measured message may take to come out
TAIL_S = 60
#: the idle job runs this long before its CPU is measured (start-up, the first polls' backoff)
IDLE_WARM_S = 3.0
#: targets (issue 54): the log job's CPU at most this many times the Kafka job's; idle, at most
#: this fraction of a core
CPU_RATIO_TARGET = 1.3
IDLE_TARGET = 0.01
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
    from samza_dagster.coordinator.model.builder import build_job_model

    container = SamzaContainer("0", build_job_model(Config(config)).model)
    threading.Thread(target=lambda: (stop.wait(), container.stop()), daemon=True).start()
    container.run()


def _run_relay(config: dict[str, str], stop) -> None:
    """The floor in the job's place on Kafka: a bare librdkafka loop that consumes the input and
    produces each message to the same partition of the output, with the engine's librdkafka
    defaults (its consumer's fetch settings, its producer's ``linger.ms`` and ``acks``) and
    nothing of the engine around them."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    from samza_dagster.system.kafka.confluent_config import CONSUMER_DEFAULTS, PRODUCER_DEFAULTS

    bootstrap = config["systems.kafka.consumer.bootstrap.servers"]
    source, sink = config["task.inputs"].split(".", 1)[1], config["bench.output.stream"]
    consumer = Consumer(dict(CONSUMER_DEFAULTS, **{"bootstrap.servers": bootstrap, "group.id": "b12-relay"}))
    producer = Producer(dict(PRODUCER_DEFAULTS, **{"bootstrap.servers": bootstrap}))
    consumer.assign([TopicPartition(source, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    while not stop.is_set():
        for m in consumer.consume(500, 0) or consumer.consume(1, 0.05):
            if m.error() is None:
                producer.produce(sink, m.value(), partition=m.partition())
        producer.poll(0)
    producer.flush(10)
    consumer.close()


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

    def reader(self, stream: str):
        from samza_dagster.model import SystemStreamPartition

        consumer = self.factory.get_consumer("log", self.config)
        ssps = [SystemStreamPartition("log", stream, p) for p in range(PARTITIONS)]
        for ssp in ssps:
            consumer.register(ssp, "0")
        consumer.start()

        def read() -> list[bytes]:
            return [e.message for batch in consumer.poll(ssps, 0.05).values() for e in batch]

        return read, consumer.stop

    def close(self) -> None:
        self.producer.stop()


class _Kafka:
    """Driver side on Kafka: topics on the broker, librdkafka producer and consumer."""

    def __init__(
        self, bootstrap: str, linger_ms: float = DRIVER_LINGER_MS, topics: tuple[str, ...] | None = None
    ) -> None:
        from confluent_kafka import Producer

        from bench.kafka_util import create_topics

        self.bootstrap = bootstrap
        create_topics(bootstrap, list(topics or (INPUT, OUTPUT)), PARTITIONS)
        self.keys = {"systems.kafka.samza.factory": "kafka", "systems.kafka.consumer.bootstrap.servers": bootstrap}
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": linger_ms})

    def send(self, value: bytes, seq: int) -> None:
        self.producer.produce(INPUT, value, partition=seq % PARTITIONS)
        self.producer.poll(0)

    def reader(self, stream: str):
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"b12-reader-{stream}",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": READER_FETCH_WAIT_MS,
            }
        )
        consumer.assign([TopicPartition(stream, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])

        def read() -> list[bytes]:
            # consume(n, timeout) returns only with n messages or at the timeout: at 1,000 msgs/s
            # a consume(500, 0.05) held each message up to 50 ms (one hop "p99 52 ms" that was the
            # reader's). What is there, else wait for the first message, as the engine's consumer.
            messages = consumer.consume(500, 0) or consumer.consume(1, 0.05)
            return [m.value() for m in messages if m.error() is None]

        return read, consumer.close

    def close(self) -> None:
        self.producer.flush(10)


def child_latency(  # noqa: C901 - one measured run's set-up, traffic and teardown in order; split when it next changes
    system: str,
    seconds: float,
    rate: int = RATE,
    bootstrap: str = "",
    job_keys: dict[str, str] | None = None,
    relay: bool = False,
    driver_linger_ms: float = DRIVER_LINGER_MS,
) -> dict[str, Any]:
    """One repetition: the job (or, with ``relay``, the bare librdkafka relay) in its own
    process, the driver here; latencies in ms, of the output and — the same measure one hop
    earlier, the system's own share — of the input."""
    from bench.harness import process_cpu_seconds

    root = tempfile.mkdtemp(prefix="b12-")
    driver = _Log(root) if system == "log" else _Kafka(bootstrap, driver_linger_ms)
    spawn = multiprocessing.get_context("spawn")
    stop = spawn.Event()
    job = spawn.Process(
        target=_run_relay if relay else _run_job,
        args=(dict(_job_config(system, driver.keys), **(job_keys or {})), stop),
        daemon=True,
    )
    job.start()
    received: dict[str, dict[int, float]] = {INPUT: {}, OUTPUT: {}}
    first_output = threading.Event()
    reading = threading.Event()
    reading.set()

    def downstream(stream: str, read) -> None:
        got = received[stream]
        while reading.is_set():
            for value in read():
                sent, seq = STAMP.unpack(value)
                got[seq] = (time.time() - sent) * 1000.0
                if stream == OUTPUT:
                    first_output.set()

    readers, closers = [], []
    for stream in (OUTPUT, INPUT):
        read, close = driver.reader(stream)
        closers.append(close)
        readers.append(threading.Thread(target=downstream, args=(stream, read), daemon=True))
        readers[-1].start()
    try:
        seq, interval = 0, 1.0 / rate
        t0 = time.perf_counter()
        measured_from = None
        deadline = None
        job_cpu0 = 0.0
        while True:
            now = time.perf_counter()
            if measured_from is None and first_output.is_set():
                measured_from, deadline = seq, now + seconds
                job_cpu0 = process_cpu_seconds(job.pid)
            if deadline is not None and now >= deadline:
                job_cpu = process_cpu_seconds(job.pid) - job_cpu0
                break
            if measured_from is None and now - t0 > 120:
                raise RuntimeError(f"B12 on {system}: no output 120 s after the first input")
            driver.send(STAMP.pack(time.time(), seq), seq)
            seq += 1
            delay = t0 + seq * interval - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        achieved = (seq - measured_from) / (time.perf_counter() - (deadline - seconds))
        wait_until = time.perf_counter() + TAIL_S
        while time.perf_counter() < wait_until and (
            len(received[OUTPUT]) < seq or len(received[INPUT]) < seq  # every message, warm-up's too
        ):
            time.sleep(0.05)
    finally:
        reading.clear()
        for reader in readers:
            reader.join(5)
        for close in closers:
            close()
        driver.close()
        stop.set()
        job.join(60)
        if job.is_alive():
            job.kill()
    result: dict[str, Any] = {"rate": achieved, "job_cpu_s": job_cpu}
    for stream, name in ((OUTPUT, "out"), (INPUT, "in")):
        latencies = sorted(received[stream][s] for s in range(measured_from, seq) if s in received[stream])
        missing = (seq - measured_from) - len(latencies)
        if missing:
            raise RuntimeError(
                f"B12 on {system}: {missing} of {seq - measured_from} measured messages never reached {stream}"
            )
        result.update(
            {
                f"{name}_p50_ms": _pct(latencies, 0.50),
                f"{name}_p99_ms": _pct(latencies, 0.99),
                f"{name}_max_ms": latencies[-1],
            }
        )
        result["messages"] = len(latencies)
    # per message, output read time − input read time: what the job (with the second hop through
    # the system) added, apart from how late the first hop delivered it
    through = sorted(received[OUTPUT][s] - received[INPUT][s] for s in range(measured_from, seq))
    result.update({"job_p50_ms": _pct(through, 0.50), "job_p99_ms": _pct(through, 0.99)})
    return result


def _thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of process ``pid``, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    result = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            fields = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue  # ended meanwhile
        result[int(tid)] = (int(fields[11]) + int(fields[12])) / ticks
    return result


def child_idle(seconds: float) -> dict[str, Any]:
    """The B12 job on the embedded log with no input at all: its CPU seconds per second over
    ``seconds`` (every thread of its process), after IDLE_WARM_S; and the busiest thread's share."""
    from bench.harness import process_cpu_seconds

    root = tempfile.mkdtemp(prefix="b12-idle-")
    driver = _Log(root)
    spawn = multiprocessing.get_context("spawn")
    stop = spawn.Event()
    job = spawn.Process(target=_run_job, args=(_job_config("log", driver.keys), stop), daemon=True)
    job.start()
    try:
        time.sleep(IDLE_WARM_S)
        threads0, cpu0, t0 = _thread_cpu(job.pid), process_cpu_seconds(job.pid), time.perf_counter()
        time.sleep(seconds)
        threads1, cpu1, elapsed = _thread_cpu(job.pid), process_cpu_seconds(job.pid), time.perf_counter() - t0
    finally:
        stop.set()
        job.join(60)
        if job.is_alive():
            job.kill()
        driver.close()
    busiest = max((threads1[t] - threads0.get(t, 0.0) for t in threads1), default=0.0)
    return {
        "idle_cpu_per_s": (cpu1 - cpu0) / elapsed,
        "busiest_thread_per_s": busiest / elapsed,
        "threads": len(threads1),
        "seconds": elapsed,
    }


def _pct(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


#: the Kafka variants: label → (the job's config overrides, the bare relay in the job's place)
KAFKA_VARIANTS: dict[str, tuple[dict[str, str], bool]] = {"kafka": ({}, False), "relay": ({}, True)}
LABELS = {
    "log": "embedded log (`log`), default config",
    "kafka": "Kafka (`kafka.client=confluent`), default config",
    "relay": "Kafka, no engine: a bare librdkafka consume → produce loop with the engine's librdkafka defaults",
}


def child_broker_warm_up(bootstrap: str, seconds: float, topic: str, rate: int = RATE) -> dict[str, Any]:
    """One hop (the driver's producer → the broker → a reader) at ``rate`` for ``seconds``, no
    job: a round of the broker's warm-up. Returns the round's one-hop p50 and p99 over the
    messages sent after the first one was read (before that, the new topic's metadata reaching
    the clients is what is measured, as in the job's runs, which count from its first output)."""
    global INPUT
    INPUT = topic
    driver = _Kafka(bootstrap, topics=(topic,))
    read, close = driver.reader(INPUT)
    latencies: dict[int, float] = {}
    reading = threading.Event()
    reading.set()

    def downstream() -> None:
        while reading.is_set():
            for value in read():
                sent, n = STAMP.unpack(value)
                latencies[n] = (time.time() - sent) * 1000.0

    reader = threading.Thread(target=downstream, daemon=True)
    reader.start()
    t0, seq = time.perf_counter(), 0
    measured_from = None
    while measured_from is None or time.perf_counter() - t0 < seconds:
        if measured_from is None and latencies:
            measured_from, t0 = seq, time.perf_counter()
        if measured_from is None and time.perf_counter() - t0 > 120:
            raise RuntimeError(f"broker warm-up: nothing read from {topic} 120 s after the first message")
        driver.send(STAMP.pack(time.time(), seq), seq)
        seq += 1
        delay = t0 + (seq - (measured_from or 0)) / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    driver.close()
    deadline = time.perf_counter() + TAIL_S
    while len(latencies) < seq and time.perf_counter() < deadline:
        time.sleep(0.05)
    reading.clear()
    reader.join(5)
    close()
    ordered = sorted(latencies[n] for n in range(measured_from, seq) if n in latencies)
    return {"p50_ms": _pct(ordered, 0.5), "p99_ms": _pct(ordered, 0.99)}


def warm_up_broker(bootstrap: str, max_s: float, log=print) -> list[dict[str, Any]]:
    """Rounds of one-hop traffic until one's p99 is under WARM_P99_MS or ``max_s`` passed."""
    from bench.harness import isolated

    rounds: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    while not rounds or (rounds[-1]["p99_ms"] >= WARM_P99_MS and time.perf_counter() - t0 < max_s):
        seconds = min(WARM_ROUND_S, max_s)
        rounds.append(
            isolated(
                "bench.bench_latency:child_broker_warm_up",
                bootstrap=bootstrap,
                seconds=seconds,
                topic=f"b12-warm-up-{len(rounds)}",
            )
        )
        rounds[-1]["seconds"] = seconds
        log(f"  broker warm-up round {len(rounds)}: {rounds[-1]}")
    return rounds


def b12_section(repetitions: int, seconds: float, log=print, warm_up_s: float = BROKER_WARM_UP_S, idle_s: float = 20.0):
    from bench.bench_kafka import with_broker_cpu
    from bench.harness import Section, alternate, column, fmt, isolated, median
    from bench.kafka_util import broker_line, start_broker

    t0 = time.perf_counter()
    broker = start_broker()
    try:
        warm = warm_up_broker(broker.bootstrap_servers, warm_up_s, log)

        def on(variant: str):
            def measure(rep: int) -> dict[str, Any]:
                if variant == "log":
                    return isolated("bench.bench_latency:child_latency", system="log", seconds=seconds)
                if variant == "idle":
                    return isolated("bench.bench_latency:child_idle", seconds=idle_s)
                job_keys, relay = KAFKA_VARIANTS[variant]
                return with_broker_cpu(
                    broker,
                    lambda rep: isolated(
                        "bench.bench_latency:child_kafka_fresh",
                        bootstrap=broker.bootstrap_servers,
                        seconds=seconds,
                        topic_suffix=f"{variant}-{rep}",
                        job_keys=job_keys,
                        relay=relay,
                    ),
                )(rep)

            return measure

        runs = alternate(repetitions, {v: on(v) for v in ("log", *KAFKA_VARIANTS, "idle")}, log)
        broker_name = broker_line(broker)
    finally:
        broker.stop()
    rows = []
    for variant, label in LABELS.items():
        rs = runs[variant]
        broker_cpu = fmt(column(rs, "broker_cpu_s"), ".1f") if variant != "log" else ""
        rows.append(
            f"| {label} | {fmt(column(rs, 'rate'))} | {fmt(column(rs, 'in_p50_ms'), '.1f')} | "
            f"{fmt(column(rs, 'in_p99_ms'), '.1f')} | {fmt(column(rs, 'out_p50_ms'), '.1f')} | "
            f"**{fmt(column(rs, 'out_p99_ms'), '.1f')}** | {fmt(column(rs, 'out_max_ms'), '.1f')} | "
            f"{fmt(column(rs, 'job_p50_ms'), '.1f')} | {fmt(column(rs, 'job_p99_ms'), '.1f')} | "
            f"{fmt(column(rs, 'job_cpu_s'), '.1f')} | {broker_cpu} | {fmt(column(rs, 'load_1min'), '.1f')} |"
        )
    p99_log, p99_kafka = median(column(runs["log"], "out_p99_ms")), median(column(runs["kafka"], "out_p99_ms"))
    p99_hop = median(column(runs["kafka"], "in_p99_ms"))
    p99_relay = median(column(runs["relay"], "out_p99_ms"))
    cpu_ratios = [
        lg / kf for lg, kf in zip(column(runs["log"], "job_cpu_s"), column(runs["kafka"], "job_cpu_s"), strict=True)
    ]
    cpu_ratio = median(cpu_ratios)
    idle = column(runs["idle"], "idle_cpu_per_s")
    idle_cpu = median(idle)
    body = (
        f"A pass-through job (1 container, {PARTITIONS} input and output partitions, default config: commit "
        f"every 60 s, `log.linger.ms` 5, librdkafka's `linger.ms` 5) in its own process; on Kafka the broker is "
        f"{broker_name}. The driver writes {RATE:,} msgs/s for {seconds:.0f} s after the job's first output, "
        "each stamped with the time just before it was handed to the producer (log: one write and commit per "
        f"message; Kafka: librdkafka with its default `linger.ms={DRIVER_LINGER_MS}`, counted in the latency). Downstream consumers of the output *and of the input* "
        "record read time − stamp per message (log: the system's consumer; Kafka: librdkafka, "
        f"`fetch.wait.max.ms={READER_FETCH_WAIT_MS}`, taking what has arrived, else waiting for the first "
        "message): the input's latency is one hop through the system alone, the output's the whole way "
        "through the job. The *relay* row puts a bare librdkafka consume → produce loop (the engine's "
        "librdkafka defaults, no engine) in the job's place: the floor of two hops through this broker. "
        f"Before the first measurement the freshly started broker was warmed up with rounds of "
        f"{WARM_ROUND_S:.0f} s of one-hop traffic at {RATE:,} msgs/s until a round's p99 was under "
        f"{WARM_P99_MS:.0f} ms (at most {warm_up_s:.0f} s): one-hop p50 / p99 per round "
        + ", ".join(f"{r['p50_ms']:,.1f} / {r['p99_ms']:,.1f} ms" for r in warm)
        + ". Every measured message came out. *Broker CPU* is the Kafka node's "
        "CPU seconds during the repetition; *job's share* the output's read time minus the input's, per "
        "message (the job and the second hop; the first hop's delay taken out); *job CPU* the CPU seconds "
        "of the job's (or the relay's) process over the measured window; *load* the machine's 1-minute load average as it started (2 cores, "
        f"shared: absolute latencies are under that load). Median (min–max) of {repetitions} repetitions, "
        "variants alternating.\n\n"
        "| | msgs/s sent | input p50, ms | input p99, ms | output p50, ms | output p99, ms | output max, ms "
        "| job's share p50, ms | job's share p99, ms | job CPU, s | broker CPU, s | load |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows) + "\n"
        f"\nJob CPU on the log over job CPU on Kafka, per repetition (target ≤ {CPU_RATIO_TARGET}): "
        f"{fmt(cpu_ratios, '.2f')}.\n\n"
        f"*Idle:* the same job on the embedded log with no input at all, {idle_s:.0f} s measured after "
        f"{IDLE_WARM_S:.0f} s of running: **{fmt([100 * x for x in idle], '.2f')} % of a core** (CPU s per s, "
        f"every thread of the process; target < {100 * IDLE_TARGET:.0f} %), its busiest thread "
        f"{fmt([100 * x for x in column(runs['idle'], 'busiest_thread_per_s')], '.2f')} %; "
        f"load as it started {fmt(column(runs['idle'], 'load_1min'), '.1f')}.\n"
    )
    met = p99_log < 100 and p99_kafka < 100 and cpu_ratio <= CPU_RATIO_TARGET and idle_cpu < IDLE_TARGET
    return Section(
        key="B12",
        title="end-to-end latency at a steady 1,000 msgs/s",
        command=f"python -m bench --only B12 --repetitions {repetitions} --latency-seconds {seconds:g}",
        body=body,
        result=f"p99 {p99_log:.1f} ms on the log, {p99_kafka:.1f} ms on Kafka (one hop through the broker "
        f"alone: p99 {p99_hop:.1f} ms; two hops through a bare librdkafka relay: p99 {p99_relay:.1f} ms); "
        f"job CPU on the log {cpu_ratio:.2f}× the job on Kafka; idle on the log {100 * idle_cpu:.2f} % of a core",
        target=f"p99 < 100 ms on the log and on Kafka with the default config; log job CPU ≤ {CPU_RATIO_TARGET}× "
        f"the Kafka job's; idle < {100 * IDLE_TARGET:.0f} % of a core",
        met=met,
        why="" if met else "Why: see *Profiles* below.",
        elapsed_s=time.perf_counter() - t0,
    )


def child_kafka_fresh(
    bootstrap: str,
    seconds: float,
    topic_suffix: str,
    job_keys: dict[str, str] | None = None,
    relay: bool = False,
    driver_linger_ms: float = DRIVER_LINGER_MS,
) -> dict[str, Any]:
    """child_latency on Kafka with topics of this measurement's own (names suffixed)."""
    global INPUT, OUTPUT
    INPUT, OUTPUT = f"b12-in-{topic_suffix}", f"b12-out-{topic_suffix}"
    return child_latency(
        "kafka", seconds, bootstrap=bootstrap, job_keys=job_keys, relay=relay, driver_linger_ms=driver_linger_ms
    )


if __name__ == "__main__":
    import sys

    print(
        child_latency(
            sys.argv[1],
            float(sys.argv[2]) if len(sys.argv) > 2 else 10.0,
            bootstrap=sys.argv[3] if len(sys.argv) > 3 else "",
        )
    )
