"""The applications, one package each: task/application code, .properties, Dagster definitions."""
