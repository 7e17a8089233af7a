"""Dagster definitions of currency_join: stream assets and job from its plan, the sensors, and an
op job that writes sample currency codes and transactions so it can be tried from the UI."""

from pathlib import Path

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.orchestration import SamzaSystemsResource, application_definitions

APPLICATION = "currency_join"
CONFIG_PATH = Path(__file__).with_name("currency_join.properties")


@dg.op
def load_currency_sample(context: dg.OpExecutionContext, samza_systems: SamzaSystemsResource) -> int:
    import json

    from jobs.currency_join.data import CURRENCIES, transactions
    from jobs.stream_helpers import create_streams, produce

    config = samza_systems.apply(Config.from_properties(CONFIG_PATH))
    create_streams(config, {"currency_codes": 4, "transactions": 4, "transactions_with_symbol": 4})
    n = produce(
        config, "transactions", [(t["country"].encode(), json.dumps(t).encode(), None) for t in transactions(2000)]
    )
    produce(
        config,
        "currency_codes",
        [(c.encode(), json.dumps({"code": c, "symbol": s}).encode(), None) for c, s in CURRENCIES],
    )
    context.log.info(f"wrote {len(CURRENCIES)} currency codes and {n} transactions")
    return n


@dg.job(name="currency_join_load_sample", description="Writes sample currency codes and transactions")
def load_sample_job() -> None:
    load_currency_sample()


def definitions() -> dg.Definitions:
    return application_definitions(
        APPLICATION, CONFIG_PATH, declared_outputs=["log.transactions_with_symbol"], jobs=[load_sample_job]
    )
