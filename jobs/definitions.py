"""The code location of this repository's dg project (``dg dev``, ``dg check defs``): every
component and Python module under ``jobs/defs`` — one SamzaJobComponent per application and
the sample loaders. ``definitions.py`` at the repository root serves the same definitions to
``dagster dev -w workspace.yaml``."""

from pathlib import Path

import dagster as dg


@dg.definitions
def defs() -> dg.Definitions:
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
