"""Checkpoints: per task, the offsets processed, changelog offsets and control bookkeeping."""

from samza_dagster.checkpoint.checkpoint import CHECKPOINT_VERSION, Checkpoint, CheckpointError
from samza_dagster.checkpoint.manager import CheckpointManager, checkpoint_stream_name, checkpoint_system

__all__ = [
    "CHECKPOINT_VERSION",
    "Checkpoint",
    "CheckpointError",
    "CheckpointManager",
    "checkpoint_stream_name",
    "checkpoint_system",
]
