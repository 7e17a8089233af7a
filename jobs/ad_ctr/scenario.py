"""ad_ctr end to end: the same skewed input joined twice — time-aligned and round-robin — and
the join buffers compared.

The skew is SAMZA-2's: views are dense (one every ~2 s of event time, hours of it), clicks sparser
(~10 % of views). Counted in messages, round-robin alternates the streams, so the clicks stream's
event time runs hours ahead of the views' and its clicks wait for views the job has not read yet.
Both runs must produce the same (view, click) results; the time-aligned one holding far less.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from jobs.ad_ctr.data import ad_traffic
from jobs.demo.runner import run_job
from jobs.stream_helpers import create_streams, produce, read_stream
from samza_dagster.config import Config

CONFIG_PATH = Path(__file__).with_name("ad_ctr.properties")
VIEWS, CLICKS = "ad_views", "ad_clicks"
PARTITIONS = 2
ROUND_ROBIN = "samza_dagster.system.chooser:RoundRobinChooserFactory"


@dataclass
class ChooserRun:
    chooser: str
    outputs: int
    clicks_joined: int
    no_click: int
    orphan_clicks: int
    #: largest number of views + clicks held at once (summed over the tasks' peaks)
    peak_buffered: int
    peak_views: int
    peak_clicks: int
    messages_processed: int
    elapsed_s: float
    results: set = field(default_factory=set, repr=False)


@dataclass
class AdCtrReport:
    views: int
    clicks: int
    expected_clicked_views: int
    aligned: ChooserRun
    round_robin: ChooserRun

    @property
    def same_results(self) -> bool:
        return self.aligned.results == self.round_robin.results

    @property
    def buffer_ratio(self) -> float:
        return self.round_robin.peak_buffered / max(1, self.aligned.peak_buffered)

    @property
    def ctr(self) -> float:
        return self.aligned.clicks_joined / max(1, self.aligned.outputs)

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k not in ("aligned", "round_robin")}
        for name in ("aligned", "round_robin"):
            run = asdict(getattr(self, name))
            run.pop("results")
            d[name] = run
        d.update(same_results=self.same_results, buffer_ratio=round(self.buffer_ratio, 2), ctr=round(self.ctr, 4))
        return d


def load_config(log_root: Path | str, **overrides: str) -> Config:
    return Config.from_properties(CONFIG_PATH).with_overrides({"systems.log.log.path": str(log_root), **overrides})


def _run(base: Config, chooser: str, runner: str, spark: Any) -> ChooserRun:
    suffix = "aligned" if chooser == "time-aligned" else "round_robin"
    out, stats = f"ad_click_through_{suffix}", f"ad_ctr_stats_{suffix}"
    config = base.with_overrides(
        {
            "job.name": f"ad-ctr-{suffix.replace('_', '-')}",
            "ad_ctr.output.stream": out,
            "ad_ctr.stats.stream": stats,
            **({"task.chooser.class": ROUND_ROBIN} if chooser == "round-robin" else {}),
        }
    )
    create_streams(config, {out: PARTITIONS, stats: 1})
    outcome = run_job(config, runner=runner, spark=spark)
    outputs = [json.loads(r.value) for r in read_stream(config, out)]
    task_stats = [json.loads(r.value) for r in read_stream(config, stats)]
    return ChooserRun(
        chooser=chooser,
        outputs=len(outputs),
        clicks_joined=sum(1 for o in outputs if o["click"]),
        no_click=sum(1 for o in outputs if not o["click"]),
        orphan_clicks=sum(s["orphans"] for s in task_stats),
        peak_buffered=sum(s["peak_total"] for s in task_stats),
        peak_views=sum(s["peak_views"] for s in task_stats),
        peak_clicks=sum(s["peak_clicks"] for s in task_stats),
        messages_processed=outcome.messages_processed,
        elapsed_s=outcome.elapsed_s,
        results={(o["view_id"], o["ad_id"], o["click"]) for o in outputs},
    )


def run_scenario(
    log_root: Path | str,
    *,
    size: int = 4000,
    runner: str = "thread",
    spark: Any = None,
    seed: int = 5,
    **overrides: str,
) -> AdCtrReport:
    base = load_config(log_root, **overrides)
    views, clicks = ad_traffic(size, seed=seed)
    create_streams(base, {VIEWS: PARTITIONS, CLICKS: PARTITIONS})
    produce(base, VIEWS, [(v["view_id"].encode(), json.dumps(v).encode(), v["ts"]) for v in views])
    produce(base, CLICKS, [(c["view_id"].encode(), json.dumps(c).encode(), c["ts"]) for c in clicks])
    aligned = _run(base, "time-aligned", runner, spark)
    rr = _run(base, "round-robin", runner, spark)
    return AdCtrReport(len(views), len(clicks), len({c["view_id"] for c in clicks}), aligned, rr)
