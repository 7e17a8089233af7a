"""Dagster definitions of pageview_pipeline: its plan gives the assets (inputs, the side input,
both intermediate streams with their inferred partition counts, the output) and the job; an op
job writes sample profiles and page views."""

from pathlib import Path

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.orchestration import SamzaSystemsResource, application_definitions

APPLICATION = "pageview_pipeline"
CONFIG_PATH = Path(__file__).with_name("pageview_pipeline.properties")


@dg.op
def load_pageview_sample(context: dg.OpExecutionContext, samza_systems: SamzaSystemsResource) -> int:
    import json

    from jobs.pageview_pipeline.data import page_views, profiles
    from jobs.stream_helpers import create_streams, produce

    config = samza_systems.apply(Config.from_properties(CONFIG_PATH))
    create_streams(config, {"page_views": 2, "user_profiles": 4, "country_counts": 2})
    people = profiles(500)
    produce(
        config, "user_profiles", [(json.dumps(p["user_id"]).encode(), json.dumps(p).encode(), None) for p in people]
    )
    views = page_views(10_000)
    produce(config, "page_views", [(None, json.dumps(v).encode(), v["ts"]) for v in views])
    context.log.info(f"wrote {len(people)} profiles and {len(views)} page views")
    return len(views)


@dg.job(name="pageview_pipeline_load_sample", description="Writes sample profiles and page views")
def load_sample_job() -> None:
    load_pageview_sample()


def definitions() -> dg.Definitions:
    return application_definitions(APPLICATION, CONFIG_PATH, jobs=[load_sample_job])
