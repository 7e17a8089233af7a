"""Dagster definitions of ad_ctr: stream assets and job from its plan, the sensors, and an op job
that writes sample views and clicks."""

from pathlib import Path

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.orchestration import SamzaSystemsResource, application_definitions

APPLICATION = "ad_ctr"
CONFIG_PATH = Path(__file__).with_name("ad_ctr.properties")


@dg.op
def load_ad_sample(context: dg.OpExecutionContext, samza_systems: SamzaSystemsResource) -> int:
    import json

    from jobs.ad_ctr.data import ad_traffic
    from jobs.stream_helpers import create_streams, produce

    config = samza_systems.apply(Config.from_properties(CONFIG_PATH))
    create_streams(config, {"ad_views": 2, "ad_clicks": 2, "ad_click_through": 2, "ad_ctr_stats": 1})
    views, clicks = ad_traffic(10_000)
    produce(config, "ad_views", [(v["view_id"].encode(), json.dumps(v).encode(), v["ts"]) for v in views])
    produce(config, "ad_clicks", [(c["view_id"].encode(), json.dumps(c).encode(), c["ts"]) for c in clicks])
    context.log.info(f"wrote {len(views)} views and {len(clicks)} clicks")
    return len(views)


@dg.job(name="ad_ctr_load_sample", description="Writes sample ad views and clicks")
def load_sample_job() -> None:
    load_ad_sample()


def definitions() -> dg.Definitions:
    return application_definitions(
        APPLICATION, CONFIG_PATH, declared_outputs=["log.ad_click_through", "log.ad_ctr_stats"], jobs=[load_sample_job]
    )
