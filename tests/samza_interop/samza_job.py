"""A Java Samza job beside the engine's jobs: ``java/jobs/SamzaCopyJob.java`` compiled against the
jars ``support/samza_dist.py`` fetches and run by Samza's own ``LocalApplicationRunner`` (the
passthrough job coordinator, Samza's Kafka system, Samza's ``KafkaCheckpointManager``).

:class:`SamzaJob` writes a job's properties and runs it to its end in a JVM of its own; the job
copies its input to an output stream and stops (committing) on the message ``app.stop.value``.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from support.samza_dist import samza_classpath
from tests.samza_interop.harness import compile_java

SOURCE = Path(__file__).resolve().parent / "java" / "jobs" / "SamzaCopyJob.java"
#: how long one run may take (a run is ~8 s on 2 cores: a JVM, Samza's start, Kafka clients)
RUN_TIMEOUT_S = 90


class SamzaJob:
    def __init__(self, work_dir: Path) -> None:
        self.classpath = samza_classpath()
        self.classes = compile_java(SOURCE, self.classpath, work_dir / "classes")
        self.work_dir = work_dir
        self.runs = 0
        # Samza logs through log4j 1.x: its WARN and ERROR lines go to stderr, where a failing
        # test shows them
        self.log4j = work_dir / "log4j.properties"
        self.log4j.write_text(
            "log4j.rootLogger=WARN, stderr\n"
            "log4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.stderr.Target=System.err\n"
            "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.stderr.layout.ConversionPattern=%d{HH:mm:ss.SSS} %-5p %c{1} - %m%n\n"
            "log4j.logger.org.apache.samza.checkpoint=INFO\n"
            "log4j.logger.org.apache.samza.container.TaskInstance=INFO\n"
        )

    def run(self, properties: Mapping[str, str]) -> str:
        """Run the job with ``properties`` to its end; its stderr (with Samza's warnings and its
        checkpoints' log lines). Fails with that stderr when the job did not finish successfully."""
        path = self._properties(properties)
        return self._java("SamzaCopyJob", str(path), str(RUN_TIMEOUT_S))

    def run_main(self, main_class: str, properties: Mapping[str, str], *args: str) -> str:
        """One of Samza's own command-line tools (``main_class``), its config loaded by Samza's
        ``PropertiesConfigLoaderFactory`` from ``properties``; its stderr."""
        path = self._properties(properties)
        return self._java(
            main_class,
            "--config",
            "job.config.loader.factory=org.apache.samza.config.loaders.PropertiesConfigLoaderFactory",
            "--config",
            f"job.config.loader.properties.path={path}",
            *args,
        )

    def _properties(self, properties: Mapping[str, str]) -> Path:
        self.runs += 1
        path = self.work_dir / f"job-{self.runs}.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in sorted(properties.items())))
        return path

    def _java(self, main_class: str, *args: str) -> str:
        java = shutil.which("java")
        if java is None:
            raise RuntimeError("the Samza interop tests run Samza with java, which is not on PATH")
        result = subprocess.run(
            [
                java,
                "-Xmx256m",
                f"-Dlog4j.configuration=file:{self.log4j}",
                "-cp",
                f"{self.classes}:{self.classpath}",
                main_class,
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S + 30,
            check=False,
            cwd=self.work_dir,  # Samza puts its store directories (state/) under the working directory
        )
        if result.returncode != 0:
            raise AssertionError(
                f"Samza's {main_class} {' '.join(args)} failed with {result.returncode}:\n{result.stderr[-4000:]}"
            )
        return result.stderr


def samza_kafka_properties(bootstrap_servers: str) -> dict[str, str]:
    """Samza's Kafka system named ``kafka``, string messages, checkpoints on it (Samza's
    ``KafkaCheckpointManager``), one broker's replication factors."""
    return {
        "job.coordinator.factory": "org.apache.samza.standalone.PassthroughJobCoordinatorFactory",
        "processor.id": "0",
        "systems.kafka.samza.factory": "org.apache.samza.system.kafka.KafkaSystemFactory",
        "systems.kafka.consumer.bootstrap.servers": bootstrap_servers,
        "systems.kafka.producer.bootstrap.servers": bootstrap_servers,
        "systems.kafka.samza.msg.serde": "string",
        "systems.kafka.default.stream.replication.factor": "1",
        "systems.kafka.samza.offset.default": "oldest",
        "serializers.registry.string.class": "org.apache.samza.serializers.StringSerdeFactory",
        "task.checkpoint.factory": "org.apache.samza.checkpoint.kafka.KafkaCheckpointManagerFactory",
        "task.checkpoint.system": "kafka",
        "task.checkpoint.replication.factor": "1",
        "task.window.ms": "200",
    }
