"""Messages/s through map→filter→partition_by→join: the operator runtime vs the same logic
hand-written as a StreamTask, same run, same log system, same store settings (inmemory
stores with changelogs). python -m bench.bench_operators [N]"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.report import machine_line, write_section
from samza_dagster.config import Config
from samza_dagster.container import SamzaContainer
from samza_dagster.coordinator.model.builder import build_job_model
from samza_dagster.runtime import run_job
from support.hl_harness import create, produce


def _setup(root: Path, n: int) -> Config:
    cfg = Config(
        {
            "job.name": "bench",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(root / "log"),
            "task.commit.ms": "5000",
        }
    )
    for s in ("events", "profiles", "out", "handmid", "handout"):
        create(cfg, s, 2)
    users = 500
    produce(cfg, "profiles", [(u % 2, None, {"u": u, "n": u}) for u in range(users)])
    produce(cfg, "events", [(i % 2, None, {"u": i % users, "v": i}) for i in range(n)])
    return cfg


def main(n: int = 50_000) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-ops-"))
    try:
        _run(root, n)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run(root: Path, n: int) -> None:
    cfg = _setup(root, n)
    bounded = {f"systems.log.streams.{s}.samza.bounded": "true" for s in ("events", "profiles")}
    app_cfg = cfg.with_overrides(
        {
            **bounded,
            "app.class": "bench.apps:PipelineApp",
            "app.store.factory": "inmemory",
            "job.intermediate.stream.partitions": "2",
        }
    )
    t0 = time.perf_counter()
    result = run_job(app_cfg.with_overrides({"job.factory.class": "thread"}))
    assert result.succeeded, result.summary_line()
    app_s = time.perf_counter() - t0

    # the same application with its own stores pickled (what the operator runtime used before
    # msgpack): the cost of keeping state without pickle. A second job name, so it starts
    # from no checkpoints and no state.
    from samza_dagster.operators.prepare import prepare_application

    pickled_cfg = app_cfg.with_overrides({"job.name": "benchpickle", "job.factory.class": "thread"})
    store_serdes = [
        k
        for k in prepare_application(pickled_cfg, create_streams=False).config
        if k.startswith("stores.") and k.endswith(".serde")
    ]
    t0 = time.perf_counter()
    result = run_job(pickled_cfg.with_overrides({k: "pickle" for k in store_serdes}))
    assert result.succeeded, result.summary_line()
    pickle_s = time.perf_counter() - t0

    # hand-written: stage 1 (events+profiles with the mid stream fed back), ended by a stop after drain
    hand = cfg.with_overrides(
        {
            "job.name": "hand",
            "task.class": "bench.apps:PipelineTask",
            "task.inputs": "log.events,log.profiles,log.handmid",
            "stores.left.factory": "inmemory",
            "stores.left.changelog": "log.hand-left",
            "stores.right.factory": "inmemory",
            "stores.right.changelog": "log.hand-right",
            "stores.left.key.serde": "msgpack",
            "stores.left.msg.serde": "msgpack",
            "stores.right.key.serde": "msgpack",
            "stores.right.msg.serde": "msgpack",
            "task.window.ms": "100",
            "task.commit.ms": "100",
        }
    )
    model = build_job_model(hand).model
    containers = [SamzaContainer(cid, model) for cid in sorted(model.containers)]
    import threading

    expected_mid = sum(1 for i in range(n) if (i * 2) % 3 != 0)
    t0 = time.perf_counter()
    threads = [threading.Thread(target=c.run, daemon=True) for c in containers]
    for t in threads:
        t.start()
    while True:
        done = sum(
            ti.metrics.processed.get(ssp, 0)
            for c in containers
            for ti in c.tasks.values()
            for ssp in ti.ssps
            if ssp.stream == "handmid"
        )
        if done >= expected_mid:
            break
        time.sleep(0.01)
    hand_s = time.perf_counter() - t0
    for c in containers:
        c.stop()
    for t in threads:
        t.join(30)
    total = n + 500
    md = (
        f"{machine_line()}\n\n"
        f"map→filter→partition_by→join over {n} events + 500 profiles (2 partitions, log system, "
        f"in-memory stores with changelogs), one run:\n\n"
        f"| variant | seconds | input msgs/s |\n|---|---|---|\n"
        f"| operator runtime (PipelineApp, thread runner, incl. planning and start-up) | {app_s:.2f} | {total / app_s:,.0f} |\n"
        f"| operator runtime, its stores pickled instead of msgpack | {pickle_s:.2f} | {total / pickle_s:,.0f} |\n"
        f"| hand-written StreamTask (same logic and stores) | {hand_s:.2f} | {total / hand_s:,.0f} |\n\n"
        f"Ratio (hand / operators): {hand_s / app_s:.2f}; msgpack state vs pickled: {pickle_s / app_s:.2f}. "
        f"The operator runtime includes planning, "
        f"stream creation and in-band end-of-stream; the hand-written run is timed until its "
        f"intermediate stream is drained.\n"
    )
    print(md)
    write_section("operators", md)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50_000)
