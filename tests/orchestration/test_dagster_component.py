"""SamzaJobComponent: a defs.yaml per job. A component that cannot be built names its defs.yaml,
the key and the value — failing ``dg check defs``, while under ``dg dev`` (no validation) it is a
placeholder with a failing check and the project's other components load. The repository's own
components build the same definitions as the applications' Python ``definitions()``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from samza_dagster.orchestration import default_resources
from samza_dagster.orchestration.component import VALIDATION_ENV
from tests import REPO

WORDCOUNT = REPO / "jobs" / "wordcount" / "wordcount.properties"


def component(folder: Path, config_path: str, extra: str = "") -> Path:
    folder.mkdir(parents=True)
    yaml = folder / "defs.yaml"
    yaml.write_text(
        f"type: samza_dagster.orchestration.SamzaJobComponent\nattributes:\n  config_path: {config_path}\n{extra}"
    )
    return yaml


#: a mistake in the wordcount config per component: (what is replaced, by what)
PREFLIGHT_MISTAKES = {
    "bad_commit": ("task.commit.ms=", "task.commit.ms=1s\n#"),
    "bad_serde": ("systems.log.samza.msg.serde=string", "systems.log.samza.msg.serde=strng"),
    "bad_task": ("WordSplitTask", "NoSuchTask"),
}


def _forget_shop() -> None:
    for name in [m for m in sys.modules if m == "shop" or m.startswith("shop.")]:
        del sys.modules[name]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A dg project: the wordcount job, and three components that cannot be built."""
    root = tmp_path / "proj"
    monkeypatch.syspath_prepend(str(root))
    _forget_shop()
    defs = root / "shop" / "defs"
    defs.mkdir(parents=True)
    (root / "shop" / "__init__.py").write_text("")
    (defs / "__init__.py").write_text("")
    (root / "shop" / "definitions.py").write_text(
        "from pathlib import Path\nimport dagster as dg\n\n\n@dg.definitions\ndef defs():\n"
        "    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)\n"
    )
    (root / "pyproject.toml").write_text(
        '[project]\nname = "shop"\nversion = "0.1.0"\n\n[tool.dg]\ndirectory_type = "project"\n\n'
        '[tool.dg.project]\nroot_module = "shop"\n'
    )
    wordcount = component(
        defs / "wordcount", os.path.relpath(WORDCOUNT, defs / "wordcount"), "  declared_outputs: [log.words]\n"
    )
    owner = component(defs / "bad_owner", "job.properties")
    (defs / "bad_owner" / "job.properties").write_text(
        WORDCOUNT.read_text()
        .replace("job.name=wordcount", "job.name=bad-owner")
        .replace("dagster.owners=team:streaming", "dagster.owners=bob")
    )
    missing = component(defs / "missing", "nowhere/job.properties")
    outputs = component(
        defs / "bad_output",
        os.path.relpath(WORDCOUNT, defs / "bad_output"),
        "  application: bad_output\n  declared_outputs: [words]\n",
    )
    plan = component(defs / "no_task", "job.properties")
    (defs / "no_task" / "job.properties").write_text("job.name=no-task\ntask.inputs=log.in\n")
    # configs `samza-dagster run` refuses at its pre-flight: a typed value, a serde, a task class
    preflight = {}
    for name, (old, new) in PREFLIGHT_MISTAKES.items():
        preflight[name] = component(defs / name, "job.properties", "  declared_outputs: [log.words]\n")
        (defs / name / "job.properties").write_text(
            WORDCOUNT.read_text().replace("job.name=wordcount", f"job.name={name}").replace(old, new)
        )
    yield (
        root,
        {"wordcount": wordcount, "owner": owner, "missing": missing, "plan": plan, "outputs": outputs, **preflight},
    )
    _forget_shop()


def load(root: Path) -> dg.Definitions:
    return dg.load_from_defs_folder(path_within_project=root / "shop")


def test_broken_components_are_contained_outside_validation(project, monkeypatch, caplog):
    monkeypatch.delenv(VALIDATION_ENV, raising=False)
    root, files = project
    defs = load(root)
    keys = defs.resolve_asset_graph().get_all_asset_keys()
    assert {dg.AssetKey(["wordcount", "sentences"]), dg.AssetKey(["wordcount", "words"])} <= keys
    assert defs.resolve_job_def("wordcount_job") is not None
    placeholders = {k.path[0] for k in keys if k.path[-1] == "execution_plan"}
    assert placeholders == {"bad_owner", "bad_output", "missing", "no_task", *PREFLIGHT_MISTAKES}
    assert f"{files['missing']}: attributes.config_path: 'nowhere/job.properties' — no such file" in caplog.text
    assert "application no_task is not loaded" in caplog.text and "app.class" in caplog.text


@pytest.mark.parametrize(
    "which, expected",
    [
        ("owner", ["attributes.config_path: 'job.properties'", "key 'dagster.owners' = 'bob'"]),
        ("missing", ["attributes.config_path: 'nowhere/job.properties' — no such file"]),
        ("plan", ["attributes.config_path: 'job.properties'", "app.class"]),
        ("outputs", ["attributes.declared_outputs[0]: 'words' — must be system.stream"]),
        ("bad_commit", ["key 'task.commit.ms' = '1s'", "must be an integer"]),
        ("bad_serde", ["key 'systems.log.samza.msg.serde' = 'strng'", "unknown serde"]),
        ("bad_task", ["key 'task.class' = 'jobs.wordcount.task:NoSuchTask'", "no attribute 'NoSuchTask'"]),
    ],
)
def test_under_validation_a_broken_component_exits_naming_file_key_and_value(
    project, monkeypatch, capsys, which, expected
):
    root, files = project
    for other, path in files.items():
        if other not in (which, "wordcount"):
            path.unlink()
    monkeypatch.setenv(VALIDATION_ENV, "1")
    with pytest.raises(SystemExit) as raised:  # the error printed, then no trace of Dagster's after it
        load(root)
    assert raised.value.code == 1
    message = capsys.readouterr().err
    assert message.startswith("error: ") and len(message.splitlines()) == 1, message
    assert str(files[which]) in message and all(e in message for e in expected), message


def dg_check_defs(root: Path, home: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    home.mkdir(exist_ok=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    # the wordcount task is the checkout's (jobs/): importable as it is where the project runs
    env = {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": f"{root}{os.pathsep}{REPO}", **extra_env}
    return subprocess.run(
        [str(Path(sys.executable).parent / "dg"), "check", "defs"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=180,
    )


@pytest.mark.parametrize("which", ["owner", "bad_commit", "missing"])
def test_dg_check_defs_fails_in_one_line_naming_the_defs_yaml_key_and_value(project, tmp_path, which):
    """The real ``dg check defs``: non-zero, and after dg's own YAML check one line, the one that
    matters — no Dagster trace after it (it was ~50 lines)."""
    root, files = project
    for other, path in files.items():
        if other not in (which, "wordcount"):
            path.unlink()
    done = dg_check_defs(root, tmp_path / "home")
    out = done.stdout
    assert done.returncode != 0, out
    lines = [line for line in out.splitlines() if line.strip() and "component YAML validated" not in line]
    expected = {
        "owner": ["key 'dagster.owners' = 'bob'"],
        "bad_commit": ["key 'task.commit.ms' = '1s'"],
        "missing": ["attributes.config_path: 'nowhere/job.properties' — no such file"],
    }[which]
    assert str(files[which]) in lines[0] and all(e in lines[0] for e in expected), out[-4000:]
    assert len(lines) == 1, out[-4000:]


def test_dg_check_defs_on_a_misspelt_input_says_what_run_says(project, tmp_path):
    """``task.inputs=log.sentence`` where ``log.sentences`` exists: ``dg check defs`` names the
    stream meant, in the words of ``samza-dagster run`` (it said "has no partition count: does it
    exist?")."""
    root, files = project
    for path in files.values():
        path.unlink()
    folder = root / "shop" / "defs" / "typo"
    component(folder, "job.properties", "  declared_outputs: [log.words]\n")
    (folder / "job.properties").write_text(
        WORDCOUNT.read_text()
        .replace("job.name=wordcount", "job.name=typo")
        .replace("task.inputs=log.sentences,", "task.inputs=log.sentence,")
    )
    # the README's walk: SAMZA_LOG_PATH is the project's ./.samza-log, dg check runs in the project
    env = {**os.environ, "SAMZA_LOG_PATH": str(root / ".samza-log"), "PYTHONPATH": f"{root}{os.pathsep}{REPO}"}
    cli = str(Path(sys.executable).parent / "samza-dagster")
    for stream in ("log.sentences", "log.sentences_replay"):
        created = subprocess.run([cli, "streams", "create", stream, "--partitions", "2"], env=env, capture_output=True)
        assert created.returncode == 0, created.stderr
    run = subprocess.run(
        [cli, "run", "--config-path", str(folder / "job.properties")], cwd=root, env=env, capture_output=True, text=True
    )
    said = "input stream log.sentence does not exist (config key 'task.inputs'): did you mean log.sentences?"
    assert run.returncode == 2 and said in run.stderr, run.stderr
    done = dg_check_defs(root, tmp_path / "home", SAMZA_LOG_PATH=env["SAMZA_LOG_PATH"])
    lines = [line for line in done.stdout.splitlines() if line.strip() and "component YAML validated" not in line]
    assert done.returncode != 0 and len(lines) == 1, done.stdout[-4000:]
    assert str(folder / "defs.yaml") in lines[0] and said in lines[0], lines[0]


def test_dg_check_defs_refuses_a_misspelt_declared_output(project, tmp_path):
    """``declared_outputs: [log.wrods]`` where the config names ``log.words``: refused in one line
    naming the stream meant (it passed, and a launch created and materialized ``wrods``). An
    output the config does not name and nothing is close to is the task's own: accepted."""
    root, files = project
    for path in files.values():
        path.unlink()
    folder = root / "shop" / "defs" / "typo_out"
    yaml = component(folder, os.path.relpath(WORDCOUNT, folder), "  declared_outputs: [log.words, log.wrods]\n")
    done = dg_check_defs(root, tmp_path / "home")
    lines = [line for line in done.stdout.splitlines() if line.strip() and "component YAML validated" not in line]
    assert done.returncode != 0 and len(lines) == 1, done.stdout[-4000:]
    assert f"{yaml}: attributes.declared_outputs[1]: 'log.wrods'" in lines[0] and "did you mean log.words?" in lines[0]

    yaml.write_text(yaml.read_text().replace("log.wrods", "log.audit_trail"))
    accepted = dg_check_defs(root, tmp_path / "home")
    assert accepted.returncode == 0, accepted.stdout[-4000:]

    # a near name that exists where the deployment keeps its streams is the task's own
    yaml.write_text(yaml.read_text().replace("log.audit_trail", "log.wrods"))
    log = tmp_path / "log"
    created = subprocess.run(
        [str(Path(sys.executable).parent / "samza-dagster"), "streams", "create", "log.wrods", "--partitions", "1"],
        env={**os.environ, "SAMZA_LOG_PATH": str(log)},
        capture_output=True,
    )
    assert created.returncode == 0, created.stderr
    existing = dg_check_defs(root, tmp_path / "home", SAMZA_LOG_PATH=str(log))
    assert existing.returncode == 0, existing.stdout[-4000:]


def test_the_repository_components_build_what_the_python_definitions_build():
    import definitions
    from jobs.ad_ctr import definitions as ad_ctr
    from jobs.clicks_lake import definitions as clicks_lake
    from jobs.currency_join import definitions as currency_join
    from jobs.pageview_pipeline import definitions as pageview_pipeline
    from jobs.user_classification import definitions as user_classification
    from jobs.wordcount import definitions as wordcount

    repo = definitions.defs
    graph = repo.resolve_asset_graph()
    for module in (ad_ctr, clicks_lake, currency_join, pageview_pipeline, user_classification, wordcount):
        python = dg.Definitions.merge(module.definitions(), dg.Definitions(resources=default_resources()))
        app = module.APPLICATION
        assert {
            k for k in graph.get_all_asset_keys() if k.path[0] == app
        } == python.resolve_asset_graph().get_all_asset_keys()
        assert {
            k for k in graph.asset_check_keys if k.asset_key.path[0] == app
        } == python.resolve_asset_graph().asset_check_keys
        assert {s.name for s in python.sensors} <= {s.name for s in repo.sensors}
        assert {s.name for s in python.schedules or []} <= {s.name for s in repo.schedules}
