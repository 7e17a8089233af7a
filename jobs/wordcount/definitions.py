"""Dagster definitions of wordcount: its stream assets and job (from the plan), the sensors, and
a small op job that loads the sample sentences so the application can be tried from the UI."""


from pathlib import Path

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.orchestration import SYSTEMS_RESOURCE_KEY, application_definitions

APPLICATION = "wordcount"
CONFIG_PATH = Path(__file__).with_name("wordcount.properties")


@dg.op(required_resource_keys={SYSTEMS_RESOURCE_KEY})
def load_sample_sentences(context: dg.OpExecutionContext) -> int:
    """Append the sample sentences to ``sentences`` (creating it)."""
    from jobs.wordcount.sample import load_sentences

    config = context.resources.samza_systems.apply(Config.from_properties(CONFIG_PATH))
    n = load_sentences(config)
    context.log.info(f"wrote {n} sentences to log.sentences")
    return n


@dg.job(name="wordcount_load_sample", description="Writes the sample sentences into wordcount's input stream")
def load_sample_job() -> None:
    load_sample_sentences()


def definitions() -> dg.Definitions:
    return application_definitions(
        APPLICATION,
        CONFIG_PATH,
        # a low-level task's outputs are in its code, not its config: declare them
        declared_outputs=["log.words"],
        jobs=[load_sample_job],
    )
