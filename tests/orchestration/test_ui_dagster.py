"""The Dagster UI in a real browser: ``dagster dev`` on the repo's workspace.yaml, headless
Chromium (Debian's, driven by playwright) opens wordcount's asset graph and launches the
materialization; the run's status and the assets' metadata are then checked through Dagster's
GraphQL API. A screenshot lands in test-artifacts/.

And the streaming job through the same ``dagster dev`` — its daemon, the run queue configured by
the repo's dagster.yaml, the default run launcher: two launches of ``user_classification_job``
give one live run and one queued behind it; Terminate (the UI's GraphQL call) stops the live run
gracefully — it ends SUCCESS tagged samza/stopped-by, with no event at ERROR level and no error
(no RUN_CANCELED with the executor's trace), the streams materialized — and only then does the
queued run start."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jobs.wordcount import definitions as wordcount
from jobs.wordcount.sample import SENTENCES, load_sentences, word_count
from samza_dagster.config import Config
from samza_dagster.orchestration import SamzaSystemsResource
from support.waiting import wait_until
from tests import REPO

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _launch_chromium(pw):
    """Debian's headless Chromium; the test command installs it (scripts/install-browser.sh), and
    without it these tests fail, saying so, rather than skip."""
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: run scripts/install-browser.sh (./scripts/test does)"
    return pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(url: str, proc: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"dagster dev exited with {proc.returncode} before serving {url}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"dagster dev did not serve {url} within {timeout_s} s")


@pytest.fixture
def dagster_dev(tmp_path):
    """``dagster dev -w workspace.yaml`` (the workspace file users keep using)."""
    yield from _serve(tmp_path, ["dagster", "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p"])


@pytest.fixture
def dg_dev(tmp_path):
    """``dg dev``: the repository as a dg project."""
    yield from _serve(tmp_path, ["dg", "dev", "--host", "127.0.0.1", "--port"])


def _serve(tmp_path, command):
    """The UI in its own process group (it ignores SIGINT inherited from a non-interactive
    parent), stopped with a signal to the group; its output in ``tmp_path/dagster-dev.log``."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text((REPO / "dagster.yaml").read_text())  # the code location's run queue
    log_path = tmp_path / "log"
    port = _free_port()
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "SAMZA_LOG_PATH": str(log_path),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(Path(sys.executable).parent.parent),
    }
    out = open(tmp_path / "dagster-dev.log", "wb")
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / command[0]), *command[1:], str(port)],
        cwd=REPO,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _wait_for(f"http://127.0.0.1:{port}/server_info", proc, 90)
        yield port, log_path, home
    finally:
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        out.close()


RUNS = """query { runsOrError { ... on Runs { results { runId status jobName tags { key value } } } } }"""
ASSET = """query($path: [String!]!) { assetOrError(assetKey: {path: $path}) { ... on Asset {
  assetMaterializations(limit: 1) { runId metadataEntries { label
    ... on IntMetadataEntry { intValue } ... on TextMetadataEntry { text } } } } } }"""


LOCATIONS = """query { workspaceOrError { ... on Workspace { locationEntries { name
  locationOrLoadError { __typename ... on PythonError { message } } } } } }"""


def _graphql(base: str, query: str, **variables):
    """Raw GraphQL over HTTP against the webserver's /graphql endpoint."""
    body = json.dumps({"query": query, "variables": variables}).encode()
    request = urllib.request.Request(f"{base}/graphql", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as resp:
        answer = json.loads(resp.read())
    assert not answer.get("errors"), answer["errors"]
    return answer["data"]


def _wait_for_code_location(base: str, timeout_s: float) -> None:
    """``/server_info`` answers before the code server has loaded definitions.py."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        entries = _graphql(base, LOCATIONS)["workspaceOrError"].get("locationEntries", [])
        loaded = [e for e in entries if e["locationOrLoadError"]]
        if loaded:
            error = loaded[0]["locationOrLoadError"]
            assert error["__typename"] == "RepositoryLocation", f"definitions.py failed to load: {error}"
            return
        time.sleep(0.3)
    raise TimeoutError(f"the code location did not load within {timeout_s} s")


def test_materialize_wordcount_from_the_ui(dg_dev, tmp_path):
    from playwright.sync_api import sync_playwright

    port, log_path, _ = dg_dev
    config = SamzaSystemsResource(log_path=str(log_path)).apply(Config.from_properties(wordcount.CONFIG_PATH))
    load_sentences(config)
    base = f"http://127.0.0.1:{port}"
    ARTIFACTS.mkdir(exist_ok=True)
    _wait_for_code_location(base, 60)

    with sync_playwright() as pw:
        browser = _launch_chromium(pw)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{base}/locations/samza_dagster/asset-groups/wordcount", wait_until="domcontentloaded")
            # the "Join the Dagster community" dialog of a fresh profile may open at any moment
            # while the page loads (late on a loaded machine); dismiss it whenever it covers a click
            skip = page.get_by_role("button", name="Skip")
            page.add_locator_handler(skip, lambda: skip.click())
            page.get_by_text("words", exact=True).first.wait_for(timeout=30000)
            page.locator("button", has_text=re.compile(r"Materialize")).first.click(timeout=30000)
            # generous: the run's process starts Dagster and the job on a machine the suite shares
            deadline = time.monotonic() + 180
            run = None
            while time.monotonic() < deadline:
                runs = _graphql(base, RUNS)["runsOrError"]["results"]
                done = [
                    r
                    for r in runs
                    if r["jobName"] in ("__ASSET_JOB", "wordcount_job")
                    and r["status"] in ("SUCCESS", "FAILURE", "CANCELED")
                ]
                if done:
                    run = done[0]
                    break
                time.sleep(0.5)
            page.goto(f"{base}/runs/{run['runId']}" if run else f"{base}/runs", wait_until="domcontentloaded")
            page.wait_for_load_state("networkidle", timeout=30000)
        finally:
            page.screenshot(path=str(ARTIFACTS / "dagster-ui-wordcount-run.png"), full_page=True)
            browser.close()

    assert run is not None, "no finished run within 180 s of clicking Materialize"
    assert run["status"] == "SUCCESS", f"run {run['runId']} ended {run['status']}"
    asset = _graphql(base, ASSET, path=["wordcount", "words"])["assetOrError"]
    (mat,) = asset["assetMaterializations"]
    assert mat["runId"] == run["runId"]
    md = {e["label"]: e.get("intValue", e.get("text")) for e in mat["metadataEntries"]}
    assert md["messages_written"] == word_count(SENTENCES)
    assert md["messages_processed"] == len(SENTENCES)
    assert md["partition_0_messages_written"] + md["partition_1_messages_written"] == word_count(SENTENCES)
    assert md["job_status"] == "completed"
    # dg dev is Dagster's current way in: no supersession warning, no dg warning about the
    # environment (the venv is active, as `source .venv/bin/activate` makes it). (Dagster's note
    # that ./dagster.yaml is not the DAGSTER_HOME one is this test's own doing: it sets one.)
    served = (tmp_path / "dagster-dev.log").read_text(errors="replace")
    assert "SupersessionWarning" not in served and "suppress this warning" not in served, served[-3000:]
    assert "All component YAML validated successfully" in served  # dg dev checked the defs.yaml files


ASSET_NODES = """{ assetNodes { assetKey { path } dependencyKeys { path } groupName jobNames } }"""


SPARK_DAILY_MATERIALIZATION = """{ assetOrError(assetKey: {path: ["clicks_lake", "daily_clicks_spark"]}) {
  ... on Asset { assetMaterializations(limit: 1) { runId partition metadataEntries { label
    ... on IntMetadataEntry { intValue } ... on TextMetadataEntry { text } } } } } }"""


@pytest.mark.spark
def test_clicks_lake_lineage_from_the_stream_through_the_table_to_the_daily_aggregate_in_the_ui(dg_dev, monkeypatch):
    """The batch half as a user meets it in ``dg dev``: the clicks_lake group's graph shows the input
    stream, the job's Iceberg table and the daily aggregate with pandas and on Spark, each downstream of
    the one before; once the sample is loaded, the job has landed it in the table and the Spark
    aggregate has run on yesterday (in this process, on the instance and log root dg dev serves),
    the UI shows that day's aggregate computed on Spark from the table, with its metadata."""
    port, log_path, home = dg_dev
    base = f"http://127.0.0.1:{port}"
    _wait_for_code_location(base, 60)
    day = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()  # the sample: the three days before today
    spark_run = _materialize_spark_daily(monkeypatch, log_path, home, day)
    nodes = {
        "/".join(n["assetKey"]["path"]): n
        for n in _graphql(base, ASSET_NODES)["assetNodes"]
        if n["groupName"] == "clicks_lake"
    }
    deps = {key: sorted("/".join(d["path"]) for d in n["dependencyKeys"]) for key, n in nodes.items()}
    assert deps == {
        "clicks_lake/click_events": [],
        "clicks_lake/clicks": ["clicks_lake/click_events"],
        "clicks_lake/daily_clicks": ["clicks_lake/clicks"],
        "clicks_lake/daily_clicks_spark": ["clicks_lake/clicks"],
    }, deps
    assert "clicks_lake_daily_clicks_spark" in nodes["clicks_lake/daily_clicks_spark"]["jobNames"]

    (mat,) = _graphql(base, SPARK_DAILY_MATERIALIZATION)["assetOrError"]["assetMaterializations"]
    assert mat["runId"] == spark_run and mat["partition"] == day
    md = {e["label"]: e.get("intValue", e.get("text")) for e in mat["metadataEntries"]}
    assert md["clicks"] > 0 and md["dagster/row_count"] > 0 and md["spark_version"].startswith("4.1")
    assert md["dagster/table_name"] == "web.daily_clicks"

    with _ui_page("dagster-ui-clicks-lake-lineage.png") as page:
        page.goto(f"{base}/locations/samza_dagster/asset-groups/clicks_lake", wait_until="domcontentloaded")
        for name in ("click_events", "clicks", "daily_clicks", "daily_clicks_spark"):  # the graph's four nodes
            page.get_by_text(name, exact=True).first.wait_for(timeout=30000)
        # the Spark aggregate's page: its materialization of that day, with what Spark computed
        page.goto(f"{base}/assets/clicks_lake/daily_clicks_spark?view=events", wait_until="domcontentloaded")
        page.get_by_text("spark_version").first.wait_for(timeout=30000)
        text = page.inner_text("body")
    assert day in text and md["spark_version"] in text, text[:3000]


def _materialize_spark_daily(monkeypatch, log_path: Path, home: Path, day: str) -> str:
    """The sample loaded, the job run (the stream landed in web.clicks) and ``day`` aggregated on
    Spark from that table, in this process on dg dev's instance and log root: the Spark run's id."""
    import dagster as dg
    from pyspark.sql import SparkSession

    import definitions

    monkeypatch.setenv("SAMZA_LOG_PATH", str(log_path))
    active = SparkSession.getActiveSession()
    if active is not None:  # a session of an earlier test, without Iceberg's extensions
        active.stop()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for name, partition in (("clicks_lake_load_sample", None), ("clicks_lake_job", None)):
            done = definitions.defs.resolve_job_def(name).execute_in_process(instance=instance, partition_key=partition)
            assert done.success, name
        spark = definitions.defs.resolve_job_def("clicks_lake_daily_clicks_spark")
        try:
            result = spark.execute_in_process(instance=instance, partition_key=day)
        finally:
            session = SparkSession.getActiveSession()
            if session is not None:
                session.stop()
        assert result.success
        return result.run_id


def _run_page_text(base: str, run_id: str, screenshot: str) -> str:
    """The run's page in headless Chromium, once its events have loaded: its visible text (a
    screenshot lands in test-artifacts/)."""
    with _ui_page(screenshot) as page:
        page.goto(f"{base}/runs/{run_id}", wait_until="domcontentloaded")
        page.get_by_text("RUN_SUCCESS").first.wait_for(timeout=60000)
        return page.inner_text("body")


@contextmanager
def _ui_page(screenshot: str) -> Iterator[Any]:
    """A page of headless Chromium that dismisses the "Join the Dagster community" dialog whenever
    it covers the page; its screenshot lands in test-artifacts/ when the block ends, however."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = _launch_chromium(pw)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            skip = page.get_by_role("button", name="Skip")
            page.add_locator_handler(skip, lambda: skip.click())
            try:
                yield page
            finally:
                page.screenshot(path=str(ARTIFACTS / screenshot), full_page=True)
        finally:
            browser.close()


def _status_of(client, run_id: str) -> str:
    return client.get_run_status(run_id).value


@pytest.mark.timeout(600)  # two runs started and stopped through dagster dev: minutes on a shared machine
def test_a_streaming_job_runs_once_and_stops_gracefully_under_dagster_dev(dagster_dev):
    from dagster import DagsterEventType, DagsterInstance
    from dagster._core.instance.ref import InstanceRef
    from dagster_graphql import DagsterGraphQLClient

    from jobs.stream_helpers import create_streams, produce
    from jobs.user_classification import definitions as user_classification
    from jobs.user_classification.data import signups

    port, log_path, home = dagster_dev
    config = SamzaSystemsResource(log_path=str(log_path)).apply(Config.from_properties(user_classification.CONFIG_PATH))
    create_streams(config, {"user_signups": 2, "reclassify_requests": 2, "user_country": 2})
    produce(config, "user_signups", [(u["user_id"].encode(), json.dumps(u).encode(), None) for u in signups(300)])
    base = f"http://127.0.0.1:{port}"
    _wait_for_code_location(base, 60)
    client = DagsterGraphQLClient("127.0.0.1", port_number=port)
    launch = dict(repository_location_name="samza_dagster", repository_name="__repository__")
    first = client.submit_job_execution("user_classification_job", **launch)
    wait_until(lambda: _status_of(client, first) == "STARTED", what="the first run to start", timeout_s=120)
    second = client.submit_job_execution("user_classification_job", **launch)
    instance = DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))
    try:
        # the live run works (it classifies the signups) while the second waits in the queue
        from jobs.stream_helpers import read_stream

        wait_until(
            lambda: len(read_stream(config, "user_country")) == 300,
            what="the live run to classify the signups",
            timeout_s=120,
        )
        assert _status_of(client, second) == "QUEUED"

        client.terminate_run(first)
        wait_until(
            lambda: _status_of(client, first) in ("CANCELED", "FAILURE", "SUCCESS"),
            what="the first run to end",
            timeout_s=120,
        )
        # a graceful stop is how a streaming job ends: the run succeeds, says why it stopped, and
        # nothing in its log is an error (no RUN_CANCELED at ERROR with an interrupted-executor trace)
        assert _status_of(client, first) == "SUCCESS"
        assert instance.get_run_by_id(first).tags["samza/stopped-by"] == "terminated from Dagster"
        events = instance.all_logs(first)
        errors = [
            (e.level, e.message or (e.dagster_event and e.dagster_event.event_type))
            for e in events
            if e.level >= logging.ERROR
        ]
        assert not errors, errors
        assert not [
            e.dagster_event.event_type
            for e in events
            if e.dagster_event and getattr(e.dagster_event.event_specific_data, "error", None) is not None
        ]
        types = {e.dagster_event.event_type for e in events if e.dagster_event}
        assert DagsterEventType.STEP_SUCCESS in types and DagsterEventType.RUN_SUCCESS in types
        assert DagsterEventType.RUN_CANCELED not in types and DagsterEventType.STEP_FAILURE not in types
        # and what a person sees: the run page in a real browser says Success, with no error in it
        page_text = _run_page_text(base, first, "dagster-ui-terminated-streaming-run.png")
        assert "Success" in page_text and "Canceled" not in page_text, page_text[:2000]
        assert "DagsterExecutionInterruptedError" not in page_text
        mats = [
            e.asset_materialization for e in instance.all_logs(first, of_type=DagsterEventType.ASSET_MATERIALIZATION)
        ]
        final = [m for m in mats if m.metadata["job_status"].value != "running"]
        assert final and final[-1].metadata["stopped_by"].value == "terminated from Dagster"
        assert final[-1].metadata["messages_processed"].value == 300

        # the queued launch starts once the live run has ended; terminate it too
        wait_until(lambda: _status_of(client, second) == "STARTED", what="the queued run to start", timeout_s=120)
        # (a terminate before its op has started the job cancels the run: nothing ran to stop)
        wait_until(
            lambda: any("starting (" in (e.user_message or "") for e in instance.all_logs(second)),
            what="the queued run's job to start",
            timeout_s=120,
        )
        client.terminate_run(second)
        wait_until(
            lambda: _status_of(client, second) == "SUCCESS", what="the second run to stop gracefully", timeout_s=120
        )
    finally:
        for run_id in (first, second):
            if _status_of(client, run_id) in ("QUEUED", "STARTING", "STARTED"):
                client.terminate_run(run_id)
        instance.dispose()
