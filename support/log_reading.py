"""Reading one partition of an embedded-log stream back in tests, as a consumer sees it."""

from __future__ import annotations

from samza_dagster.config import Config
from samza_dagster.system import SystemStreamPartition
from samza_dagster.system.log import LogSystemFactory

Message = tuple[int, "str | None", "str | None"]  # offset, key, value (None: a tombstone)


def read_partition(config: Config, system: str, stream: str, partition: int, start: str) -> list[Message]:
    """Every message of ``partition`` from offset ``start`` to its end, keys and values decoded."""
    consumer = LogSystemFactory().get_consumer(system, config)
    ssp = SystemStreamPartition(system, stream, partition)
    consumer.register(ssp, start)
    consumer.start()
    out: list[Message] = []
    try:
        while True:
            envelopes = consumer.poll([ssp], 0).get(ssp, [])
            if not envelopes:
                return out
            out += [(int(e.offset), e.key and e.key.decode(), e.message and e.message.decode()) for e in envelopes]
    finally:
        consumer.stop()
