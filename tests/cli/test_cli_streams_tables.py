"""``streams describe`` / ``tail`` on a files stream and an Iceberg table, as a user meets them after
a job copied the one into the other: the files stream's partitions with their files, rows and
offsets ``<file>:<row>``, its last rows at those offsets; the table's rows, snapshots and the
checkpoint its job's last commit left in the snapshot summary (the files offset it resumes from);
``tail`` of a table is refused, saying what reads one."""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pyarrow.parquet as pq

from samza_dagster.cli import main
from samza_dagster.runtime import run_job
from tests.system.files.test_files_columnar import _config

ROWS = 300


def _describe(capsys, props: str, stream: str) -> str:
    assert main(["streams", "describe", stream, "--config-path", props]) == 0
    return capsys.readouterr().out


def test_describe_and_tail_of_a_files_stream_and_of_the_iceberg_table_a_job_wrote(tmp_path, capsys):
    for n in range(2):  # one partition of two files of 150 rows
        ids = list(range(n * 150, (n + 1) * 150))
        table = pa.table({"id": ids, "amount": [i / 4 for i in ids], "name": [f"n{i}" for i in range(150)]})
        (tmp_path / "lake" / "events").mkdir(parents=True, exist_ok=True)
        pq.write_table(table, tmp_path / "lake" / "events" / f"part-0-{n}.parquet")
    config = _config(
        tmp_path,
        **{
            "test.output.system": "ice",
            "systems.ice.samza.factory": "iceberg",
            "systems.ice.iceberg.catalog.type": "sql",
            "systems.ice.iceberg.catalog.uri": f"sqlite:///{tmp_path}/catalog.db",
            "systems.ice.iceberg.catalog.warehouse": f"file://{tmp_path}/warehouse",
        },
    )
    result = run_job(config)  # the columnar copy task: files.events → ice.out
    assert result.succeeded, result.summary_line()
    props = tmp_path / "job.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in config.items()))

    files = _describe(capsys, str(props), "files.events")
    lines = files.splitlines()
    assert lines[0] == "files.events: 1 partition"
    assert re.match(r"\s+0\s+2\s+300\s+part-0-0.parquet:0\s+part-0-1.parquet:149\s+part-0-1.parquet:150$", lines[2])
    assert re.match(r"\s+part-0-0.parquet\s+150\s+\d+\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$", lines[5])

    assert main(["streams", "tail", "files.events", "-n", "3", "--config-path", str(props)]) == 0
    tail = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in tail] == [f"0:part-0-1.parquet:{r}" for r in (147, 148, 149)]
    assert json.loads(tail[-1].split("\t")[2]) == {"id": 299, "amount": 74.75, "name": "n149"}

    table = _describe(capsys, str(props), "ice.out")
    assert table.splitlines()[0].startswith("ice.out: table samza.out, 1 partition (offsets count rows): 300 rows, ")
    assert re.search(r"checkpoint in snapshot \d+'s summary: job columnar-1, container 0", table), table
    (task_line,) = [line for line in table.splitlines() if line.startswith("    Partition 0: ")]
    (offset,) = json.loads(task_line.split(": ", 1)[1])["offsets"]
    assert offset["offset"] == "part-0-1.parquet:149"  # where the job resumes: after the last row

    assert main(["streams", "describe", "ice.outt", "--config-path", str(props)]) == 1
    assert "no table samza.outt in its catalog (a job's first write creates it)" in capsys.readouterr().err

    assert main(["streams", "tail", "ice.out", "--config-path", str(props)]) == 2
    refused = capsys.readouterr().err
    assert "ice.out is a table" in refused and "streams describe ice.out" in refused
