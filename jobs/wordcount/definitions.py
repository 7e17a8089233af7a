"""Dagster definitions of wordcount: its stream assets and job (from the plan), the sensors, and
a small op job that loads the sample sentences so the application can be tried from the UI."""

from pathlib import Path

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.orchestration import SamzaSystemsResource, application_definitions, reprocessing_backfill

APPLICATION = "wordcount"
CONFIG_PATH = Path(__file__).with_name("wordcount.properties")


@dg.op
def load_sample_sentences(context: dg.OpExecutionContext, samza_systems: SamzaSystemsResource) -> int:
    """Append the sample sentences to ``sentences`` (creating it)."""
    from jobs.wordcount.sample import load_sentences

    config = samza_systems.apply(Config.from_properties(CONFIG_PATH))
    n = load_sentences(config)
    context.log.info(f"wrote {n} sentences to log.sentences")
    return n


@dg.job(name="wordcount_load_sample", description="Writes the sample sentences into wordcount's input stream")
def load_sample_job() -> None:
    load_sample_sentences()


#: the first day the reprocessing backfill offers
BACKFILL_START_DATE = "2024-01-01"


def replay_backfill():  # type: ignore[no-untyped-def]
    """Re-send one day of past ``sentences`` (by each record's timestamp) into the batch stream
    ``sentences_replay``, which the job reads at priority 0 below the real-time 1."""
    return reprocessing_backfill(
        APPLICATION,
        CONFIG_PATH,
        source_stream="sentences",
        batch_stream="sentences_replay",
        start_date=BACKFILL_START_DATE,
    )


def definitions() -> dg.Definitions:
    return application_definitions(
        APPLICATION,
        CONFIG_PATH,
        # a low-level task's outputs are in its code, not its config: declare them
        declared_outputs=["log.words"],
        jobs=[load_sample_job],
        backfills=[replay_backfill()],
    )
