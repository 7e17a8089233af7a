"""``python -m samza_dagster.cli`` — the same as the ``samza-dagster`` console script."""

import sys

from samza_dagster.cli import main

sys.exit(main())
