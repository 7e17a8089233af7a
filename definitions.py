"""The Dagster code location of this repository for ``dagster dev -w workspace.yaml``: the same
definitions ``dg dev`` serves (``jobs/definitions.py``: one SamzaJobComponent per application
under ``jobs/defs``, and the sample loaders).

Resources come from the environment (``resources/``): ``SAMZA_LOG_PATH`` (the embedded log's root, default
``./.samza-log``), ``SAMZA_KAFKA_BOOTSTRAP_SERVERS`` (a Kafka system named ``kafka``), both
overridable in the launchpad. An application whose config or plan is rejected shows up as a
failing ``plan_accepted`` check on ``[<app>, execution_plan]`` (and an ERROR log line naming its
defs.yaml), and the others load as usual.
"""

from pathlib import Path

import dagster as dg

from resources import RESOURCES

defs = dg.Definitions.merge(
    dg.load_from_defs_folder(path_within_project=Path(__file__).parent),
    # every job runs one op: in-process, so a graceful terminate (Materialize from an asset page
    # included) ends without an ERROR event (docs/decisions.md, "A graceful Terminate ends green")
    dg.Definitions(resources=RESOURCES, executor=dg.in_process_executor),
)
