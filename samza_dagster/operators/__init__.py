"""The operator runtime: a high-level application's OperatorSpec graph executed message by
message inside Samza tasks, with in-band control messages on intermediate streams.

``prepare_application(config)`` plans the application and returns a
:class:`PreparedApplication` (run config, input streams, side inputs, intermediate stream
specs, the task factory); ``create_container(prepared, container_id, job_model)`` builds a
container whose tasks run the graph. To run an application, give its config
(``app.class``) to :func:`samza_dagster.runtime.run_job` — every runner (thread, process,
spark) prepares it through this package.
"""

from samza_dagster.operators.errors import OperatorError
from samza_dagster.operators.prepare import PreparedApplication, create_container, prepare_application
from samza_dagster.operators.task import OperatorTask, OperatorTaskFactory

__all__ = [
    "OperatorError",
    "OperatorTask",
    "OperatorTaskFactory",
    "PreparedApplication",
    "create_container",
    "prepare_application",
]
