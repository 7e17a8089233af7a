"""The code location of this repository's dg project (``dg dev``, ``dg check defs``): every
component and Python module under ``jobs/defs`` — one SamzaJobComponent per application and
the sample loaders — with the example deployment's resources (``resources/``, from the
environment). ``definitions.py`` at the repository root serves the same definitions to
``dagster dev -w workspace.yaml``.

Every job here runs one op, so the code location's executor is the in-process one: Materialize
from an asset page then stops a streaming job as its ``<app>_job`` does — the run ends
successfully, with no ERROR event (docs/decisions.md, "A graceful Terminate ends green")."""

from pathlib import Path

import dagster as dg

from resources import RESOURCES


@dg.definitions
def defs() -> dg.Definitions:
    return dg.Definitions.merge(
        dg.load_from_defs_folder(path_within_project=Path(__file__).parent),
        dg.Definitions(resources=RESOURCES, executor=dg.in_process_executor),
    )
