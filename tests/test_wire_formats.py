"""The JSON of the model objects, pinned: the plan (what `samza-dagster plan` prints and the
Dagster assets are built from), the JobModel the job coordinator serves, a container summary.
tests/golden/wire.json was written by the hand-written encoders these formats had before the
generic codec (samza_dagster/codec.py); a change to it is a change of a public format.
Regenerate deliberately: python -c "import tests.test_wire_formats as t; t.write_golden()"."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from samza_dagster.codec import from_wire, to_wire
from samza_dagster.container.summary import ContainerSummary
from samza_dagster.coordinator.model.job_model import JobModel
from samza_dagster.model import SystemStreamPartition
from tests.wire_samples import samples

GOLDEN = Path(__file__).resolve().parent / "golden" / "wire.json"


def _current() -> dict:
    s = samples()
    return {
        "plans": {name: json.loads(plan.to_json()) for name, plan in s["plans"].items()},
        "job_model": s["job_model"].to_dict(),
        "job_model_unmasked": s["job_model"].to_dict(mask_secrets=False),
        "summary": s["summary"].to_dict(),
    }


def write_golden() -> None:
    GOLDEN.write_text(json.dumps(_current(), indent=1, sort_keys=True) + "\n")


def test_every_wire_format_is_what_it_was():
    assert _current() == json.loads(GOLDEN.read_text())


def test_the_job_model_comes_back_from_its_json_whole():
    model = samples()["job_model"]
    back = JobModel.from_dict(json.loads(json.dumps(model.to_dict(mask_secrets=False))))
    assert back == model
    assert back.max_change_log_stream_partitions == model.max_change_log_stream_partitions
    assert all(isinstance(ssp, SystemStreamPartition) for t in back.all_tasks().values() for ssp in t.ssps)


def test_a_summary_comes_back_from_its_json():
    summary = samples()["summary"]
    back = ContainerSummary.from_dict(json.loads(json.dumps(summary.to_dict())))
    assert back == dataclasses.replace(summary, elapsed_s=round(summary.elapsed_s, 3))


def test_unknown_keys_are_ignored_and_missing_ones_take_defaults():
    data = samples()["summary"].to_dict()
    data["added_by_a_newer_writer"] = 1
    del data["metrics"]
    assert ContainerSummary.from_dict(data).metrics == {}


def test_renamed_skipped_sorted_and_extra_fields():
    @dataclasses.dataclass
    class Sample:
        source: str = dataclasses.field(metadata={"wire": "from"})
        names: list[str] = dataclasses.field(metadata={"sorted": True})
        hidden: int = dataclasses.field(default=0, metadata={"wire": None})
        tags: set[str] = dataclasses.field(default_factory=set)

        def wire_extras(self):
            return {"count": len(self.names)}

    assert to_wire(Sample("a", ["c", "b"], 1, {"y", "x"})) == {
        "from": "a",
        "names": ["b", "c"],
        "tags": ["x", "y"],
        "count": 2,
    }
    # a field kept off the wire is never read from it either
    assert from_wire(Sample, {"from": "a", "hidden": 5, "names": ["c"], "tags": ["x"]}) == Sample("a", ["c"], 0, {"x"})
