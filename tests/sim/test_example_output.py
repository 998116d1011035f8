"""The example output (``simulator/outputs/queue_lengths.py``): ``--queue-lengths`` end to end.

``batpolicy simulate`` on the bundled default workload writes ``queue_lengths.csv``: a
row at each instant a job is submitted, starts or ends (the times of ``jobs.csv``), with
as many jobs waiting and running as ``jobs.csv`` says; the switch comes from the
registry, and the file follows Batsim's naming with ``-e`` and the ``.part`` rule.
"""

from __future__ import annotations

import csv
from pathlib import Path

from batpolicy.app import cli
from batpolicy.simulator.outputs.queue_lengths import QueueLengths
from batpolicy.simulator.outputs.registry import registered_outputs

from clirun import read_jobs, restore_logging  # noqa: F401


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_the_registry_and_the_command_line_know_the_example() -> None:
    assert registered_outputs()["queue_lengths"] is QueueLengths
    args = cli.build_parser().parse_args(["simulate", "--queue-lengths"])
    assert args.queue_lengths is True
    assert cli.build_parser().parse_args(["fake-batsim"]).queue_lengths is False


def test_queue_lengths_has_a_row_at_each_event_time_with_jobs_csvs_counts(
        tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli.main(["simulate", "--policy", "easy", "-o", str(out), "--quiet",
                     "--queue-lengths"]) == 0
    jobs = list(read_jobs(out / "jobs.csv").values())
    assert jobs and all(j["final_state"] != "REJECTED" for j in jobs)
    rows = _rows(out / "queue_lengths.csv")
    assert list(rows[0]) == ["time", "waiting", "running"]
    # one row per instant, in time order, at exactly jobs.csv's event times
    times = [row["time"] for row in rows]
    assert times == sorted(set(times), key=float)
    events = {j[key] for j in jobs for key in ("submission_time", "starting_time",
                                               "finish_time")}
    assert set(times) == events
    spans = [(float(j["submission_time"]), float(j["starting_time"]), float(j["finish_time"]))
             for j in jobs]
    for row in rows:
        now = float(row["time"])
        waiting = sum(sub <= now < start for sub, start, _ in spans)
        running = sum(start <= now < end for _, start, end in spans)
        assert (int(row["waiting"]), int(row["running"])) == (waiting, running), row
    assert rows[-1]["waiting"] == rows[-1]["running"] == "0"
    assert max(int(r["waiting"]) for r in rows) > 0  # the example queues some jobs
    assert not list(out.glob("*.part"))


def test_queue_lengths_follows_batsims_naming_and_is_only_written_when_asked(
        tmp_path: Path) -> None:
    assert cli.main(["simulate", "--policy", "fcfs", "-e", str(tmp_path / "x" / "run"),
                     "--quiet", "--queue-lengths", "--max-jobs", "20"]) == 0
    assert len(_rows(tmp_path / "x" / "run_queue_lengths.csv")) > 20
    assert cli.main(["simulate", "--policy", "fcfs", "-o", str(tmp_path / "plain"),
                     "--quiet", "--max-jobs", "20"]) == 0
    assert not (tmp_path / "plain" / "queue_lengths.csv").exists()
