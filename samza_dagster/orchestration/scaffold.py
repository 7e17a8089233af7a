"""``dg scaffold defs samza_dagster.orchestration.SamzaJobComponent <name>``: a defs.yaml and, when
the folder has none, a job to start from — a ``job.properties`` and a pass-through ``task.py``
(input stream ``input`` to output stream ``output`` on the embedded log), so the new component
passes ``dg check defs`` at once and is edited from there."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from dagster.components.component_scaffolding import scaffold_component

PROPERTIES = """\
# The Samza job of this component (keys: samza-dagster's docs/reference.md).
job.name={name}
# thread: containers in this process; spark: one Spark task per container (the product default)
job.factory.class=thread
job.default.system=log

task.class={task_module}:PassThroughTask
task.inputs=log.input
task.commit.ms=1000

# where the log lives is the deployment's: the samza_systems resource / SAMZA_LOG_PATH
systems.log.samza.factory=log
systems.log.samza.msg.serde=string
systems.log.samza.key.serde=string
systems.log.samza.offset.default=oldest

streams.input.samza.system=log
streams.input.partitions=1
# bounded: a run stops at the end of what was there when it started
streams.input.samza.bounded=true
streams.output.samza.system=log
streams.output.partitions=1
"""

TASK = '''\
"""The task of this component's job: every input message to the output stream."""

from samza_dagster.system import OutgoingMessageEnvelope, SystemStream
from samza_dagster.task import StreamTask

OUTPUT = SystemStream("log", "output")


class PassThroughTask(StreamTask):
    def process(self, envelope, collector, coordinator):  # type: ignore[no-untyped-def]
        collector.send(OutgoingMessageEnvelope(OUTPUT, envelope.message, key=envelope.key))
'''


def module_name(target: Path, project_root: Path | None) -> str:
    """The importable module name of ``target`` (a folder of the project's defs module)."""
    root = project_root or Path.cwd()
    base = root / "src" if (root / "src").is_dir() else root
    return ".".join(target.resolve().relative_to(base.resolve()).parts)


class SamzaJobScaffolder(dg.Scaffolder):
    def scaffold(self, request: dg.ScaffoldRequest) -> None:
        target = request.target_path
        attributes: dict[str, object] = {"config_path": "job.properties", "declared_outputs": ["log.output"]}
        scaffold_component(request, attributes)
        properties, task = target / "job.properties", target / "task.py"
        if not properties.exists() and not task.exists():
            task.write_text(TASK)
            name = target.name.replace("_", "-")
            properties.write_text(
                PROPERTIES.format(name=name, task_module=f"{module_name(target, request.project_root)}.task")
            )
