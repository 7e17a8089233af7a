"""An application's input streams as Dagster observable source assets.

An input stream's data version is its newest offsets. Dagster uses an asset's observations as its
data version only when the asset is *observable*; a plain ``AssetSpec`` keeps "INITIAL" whatever
is observed, so the outputs' provenance never matched it and every output showed "Unsynced"
after a successful run. Each input is an observable source asset of its own (one asset per stream:
a batch stream depends on the backfill that re-sends its source stream into it, so one asset
for all inputs would make a cycle); the UI's "Observe" works on them, and the stream observation
sensor and the job's op report observations of the same keys.
"""

import warnings
from collections.abc import Iterator, Sequence

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.orchestration.assets import StreamAssets
from samza_dagster.orchestration.observation import observe_streams
from samza_dagster.orchestration.resources import SamzaSystemsResource
from samza_dagster.planner.plan import StreamInfo

SYSTEMS_RESOURCE_KEY = "samza_systems"


def observable_inputs(
    streams: StreamAssets, config: Config, specs: Sequence[dg.AssetSpec]
) -> list[dg.AssetsDefinition]:
    """An observable source asset for each of ``specs`` (the application's read streams)."""
    by_key = {streams.keys[s.id]: s for s in streams.read_streams()}
    return [_observable(spec, by_key[spec.key], config, streams.group_name) for spec in specs]


def _observable(spec: dg.AssetSpec, stream: StreamInfo, config: Config, group_name: str) -> dg.AssetsDefinition:
    def _observe(context: dg.AssetExecutionContext) -> Iterator[dg.ObserveResult]:
        systems: SamzaSystemsResource = getattr(context.resources, SYSTEMS_RESOURCE_KEY)
        obs = observe_streams(systems.apply(config), [stream], with_lag=True)[stream.id]
        yield dg.ObserveResult(
            asset_key=spec.key, metadata=obs.metadata(), data_version=dg.DataVersion(obs.data_version)
        )

    # Dagster 1.13 marks its observable-source-asset decorators beta, and they are the only way to
    # make an external asset's observations its data version; dagster is pinned in
    # pyproject.toml, so the warning would only repeat on every load of every application
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.multi_observable_source_asset(
            specs=[spec],
            name=f"{group_name}_observe_{stream.id}".replace("-", "_"),
            description=f"Observes the stream {stream.system}.{stream.physical_name}: newest offsets, the job's lag",
            required_resource_keys={SYSTEMS_RESOURCE_KEY},
        )(_observe)
