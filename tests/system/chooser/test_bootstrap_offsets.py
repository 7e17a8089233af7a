"""BootstrappingChooser's head check: integer fast path vs the SystemAdmin's comparator.

With a known integer comparator (log / in-memory / Kafka admins, or ``integer_offsets = True``) the
chooser compares integers itself; any other admin's comparator decides. Both must choose exactly
the same sequence, and a bad offset must fail naming its partition.
"""

from __future__ import annotations

import random

import pytest

from samza_dagster.system import (
    IncomingMessageEnvelope,
    SystemStream,
    SystemStreamMetadata,
    SystemStreamPartition,
    SystemStreamPartitionMetadata,
)
from samza_dagster.system.chooser import BootstrappingChooser, RoundRobinChooser, TieredPriorityChooser
from samza_dagster.system.inmemory.admin import InMemorySystemAdmin

CODES = SystemStream("s", "codes")
TX = SystemStream("s", "tx")


class CountingAdmin:
    """Integer offsets through a comparator the chooser does not know: it must be called."""

    def __init__(self) -> None:
        self.calls = 0

    def offset_comparator(self, a: str, b: str) -> int:
        self.calls += 1
        x, y = int(a), int(b)
        return (x > y) - (x < y)


class HintedAdmin(CountingAdmin):
    integer_offsets = True


class HexInMemoryAdmin(InMemorySystemAdmin):
    """Overrides the in-memory admin's comparator: must not be mistaken for integer offsets."""

    calls = 0

    def offset_comparator(self, a: str, b: str) -> int:
        HexInMemoryAdmin.calls += 1
        x, y = int(a, 16), int(b, 16)
        return (x > y) - (x < y)


def run(
    admin, offsets: dict[int, list[str]], newest: dict[int, str], tx: int = 3, base: int = 10
) -> list[tuple[str, int, str]]:
    """Bootstrap CODES (sparse offsets per partition) before TX, feeding the chooser as
    SystemConsumers does (the chosen partition's next envelope right after each choose)."""
    upcoming = {p: format(int(n, base) + 1, "x" if base == 16 else "d") for p, n in newest.items()}
    parts = {p: SystemStreamPartitionMetadata(offs[0], newest[p], upcoming[p]) for p, offs in offsets.items()}
    metadata = {CODES: SystemStreamMetadata("codes", parts)}
    inner = TieredPriorityChooser({CODES: 1, TX: 0}, {1: RoundRobinChooser(), 0: RoundRobinChooser()})
    chooser = BootstrappingChooser(inner, metadata, {"s": admin} if admin is not None else None)
    queues: dict[SystemStreamPartition, list[IncomingMessageEnvelope]] = {}
    for p, offs in offsets.items():
        ssp = SystemStreamPartition("s", "codes", p)
        queues[ssp] = [IncomingMessageEnvelope(ssp, o, None, o) for o in offs]
        chooser.register(ssp, offs[0])
    tx_ssp = SystemStreamPartition("s", "tx", 0)
    queues[tx_ssp] = [IncomingMessageEnvelope(tx_ssp, str(i), None, i) for i in range(tx)]
    chooser.register(tx_ssp, "0")
    chooser.start()
    for queue in queues.values():
        chooser.update(queue.pop(0))
    out = []
    while (envelope := chooser.choose()) is not None:
        out.append((envelope.ssp.stream, envelope.ssp.partition, envelope.offset))
        queue = queues[envelope.ssp]
        if queue:
            chooser.update(queue.pop(0))
    assert not chooser.is_bootstrapping
    return out


def sparse_offsets(rng: random.Random, n: int) -> list[str]:
    offsets, o = [], rng.randrange(0, 5)
    for _ in range(n):
        offsets.append(str(o))
        o += rng.randrange(1, 4)  # gaps, as Kafka's compaction or transaction markers leave
    return offsets


@pytest.mark.parametrize("seed", range(5))
def test_integer_fast_path_chooses_what_the_comparator_chooses(seed):
    rng = random.Random(seed)
    offsets = {p: sparse_offsets(rng, rng.randrange(1, 30)) for p in range(3)}
    # newest: the last offset, or an offset in the gap before it (the last envelope is then past
    # the newest offset, which must count as reaching head just the same)
    newest = {}
    for p, offs in offsets.items():
        low = int(offs[-2]) + 1 if len(offs) > 1 else int(offs[-1])
        newest[p] = str(rng.randint(low, int(offs[-1])))
    via_comparator = run(CountingAdmin(), offsets, newest)
    assert run(InMemorySystemAdmin("s"), offsets, newest) == via_comparator
    assert run(None, offsets, newest) == via_comparator
    assert run(HintedAdmin(), offsets, newest) == via_comparator
    first_tx = [s for s, _, _ in via_comparator].index("tx")
    assert first_tx == sum(len(o) for o in offsets.values())


def test_unknown_comparator_is_called_and_a_hinted_one_only_at_start():
    offsets = {0: [str(i) for i in range(10)]}
    counting, hinted = CountingAdmin(), HintedAdmin()
    run(counting, offsets, {0: "9"})
    run(hinted, offsets, {0: "9"})
    assert counting.calls >= 10  # one per chosen envelope of the lagging partition
    assert hinted.calls == 1  # the start-time "at head already?" check only


def test_a_subclass_overriding_a_known_comparator_is_not_taken_for_integers():
    HexInMemoryAdmin.calls = 0
    offsets = {0: [format(i, "x") for i in range(12)]}  # "a" < "b": hex, not integers
    out = run(HexInMemoryAdmin("s"), offsets, {0: "b"}, base=16)
    assert [s for s, _, _ in out] == ["codes"] * 12 + ["tx"] * 3
    assert HexInMemoryAdmin.calls >= 12  # the start check + every envelope but the one equal to newest


@pytest.mark.parametrize("admin", [None, InMemorySystemAdmin("s")], ids=["no-admin", "in-memory-admin"])
def test_a_non_integer_envelope_offset_fails_naming_the_partition(admin):
    with pytest.raises(ValueError, match=r"'oops' of s\.codes partition 0 is not an integer"):
        run(admin, {0: ["0", "1", "oops", "3"]}, {0: "3"})


def test_end_of_stream_still_counts_as_caught_up_on_the_fast_path():
    ssp = SystemStreamPartition("s", "codes", 0)
    tx_ssp = SystemStreamPartition("s", "tx", 0)
    inner = TieredPriorityChooser({CODES: 1, TX: 0}, {1: RoundRobinChooser(), 0: RoundRobinChooser()})
    meta = {CODES: SystemStreamMetadata("codes", {0: SystemStreamPartitionMetadata("0", "99", "100")})}
    chooser = BootstrappingChooser(inner, meta, {"s": InMemorySystemAdmin("s")})
    chooser.register(ssp, "0")
    chooser.register(tx_ssp, "0")
    chooser.start()
    chooser.update(IncomingMessageEnvelope(tx_ssp, "0", None, 0))
    chooser.update(IncomingMessageEnvelope(ssp, "0", None, 0))
    assert chooser.choose().offset == "0"
    assert chooser.choose() is None  # still lagging, nothing of it in the chooser
    chooser.update(IncomingMessageEnvelope.end_of_stream(ssp))
    assert chooser.choose().is_end_of_stream
    assert chooser.choose().ssp == tx_ssp
