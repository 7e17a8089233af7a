"""An unbounded job's input, as its last observation reads after a Terminate: every message the
run processed — those that arrived while it ran included — is counted as checkpointed, as the
checkpoint holds it (it read ``processed_by_run 17000, messages_at_start 5000,
checkpointed_through 5000``). Through a real on-disk Dagster instance's event log, which the
asset page reads."""

from __future__ import annotations

import dagster as dg

from jobs.wordcount import definitions as wordcount
from jobs.wordcount.sample import SENTENCES, load_sentences
from samza_dagster.config import Config
from samza_dagster.orchestration import SamzaSystemsResource, application_definitions
from samza_dagster.orchestration.assets import stream_key
from samza_dagster.orchestration.observation import checkpointed_offsets
from support.live_runs import live_run
from support.waiting import wait_until
from tests.orchestration.test_dagster_streaming import STREAMING

LATE = [f"a late sentence number {i}" for i in range(40)]


def test_checkpointed_through_counts_the_messages_that_arrived_while_the_job_ran(tmp_path):
    systems = SamzaSystemsResource(log_path=str(tmp_path / "log"))
    base = Config.from_properties(wordcount.CONFIG_PATH).with_overrides(STREAMING)
    defs = dg.Definitions.merge(
        dg.Definitions(resources={"samza_systems": systems}),
        application_definitions("wordcount", base, declared_outputs=["log.words"]),
    )
    config = systems.apply(base)
    load_sentences(config)
    (tmp_path / "dagster").mkdir()

    def committed() -> int:
        offsets = checkpointed_offsets(config) or {}  # None until the job's first commit
        return sum(int(o) + 1 for ssp, o in offsets.items() if ssp.stream == "sentences")

    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        with live_run(defs.resolve_job_def("wordcount_job"), instance, "wordcount-1") as live:
            wait_until(lambda: committed() == len(SENTENCES), what="the sample's sentences committed")
            load_sentences(config, LATE)  # while the job runs
            wait_until(lambda: committed() == len(SENTENCES) + len(LATE), what="the late sentences committed")
        assert live.result.success
        events = instance.all_logs(live.run_id, of_type=dg.DagsterEventType.ASSET_OBSERVATION)
        observed = [
            e.asset_observation
            for e in events
            if e.asset_observation is not None
            and e.asset_observation.asset_key == stream_key("wordcount", "sentences")
            and "processed_by_run" in e.asset_observation.metadata
        ]
        md = {k: v.value for k, v in observed[-1].metadata.items()}
    assert md["messages_at_start"] == len(SENTENCES)
    assert md["processed_by_run"] == len(SENTENCES) + len(LATE)
    assert md["checkpointed_through"] == md["processed_by_run"] == committed()
    assert md["messages_at_end"] == len(SENTENCES) + len(LATE)
    assert md["progress"] == 1.0 and md["lag"] == 0
