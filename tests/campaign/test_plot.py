"""``batpolicy plot``: every kind of picture is written from a real run and campaign."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from batpolicy.scheduler.app.campaign.executors import LocalPool  # noqa: E402
from batpolicy.scheduler.app.campaign.runner import run_campaign  # noqa: E402
from batpolicy.scheduler.app.campaign.spec import load_campaign  # noqa: E402
from batpolicy.scheduler.app.plot import gantt_boxes  # noqa: E402


@pytest.fixture
def finished(small_campaign: Path) -> Path:
    campaign = load_campaign(small_campaign)
    run_campaign(campaign, LocalPool(2), progress=False)
    return campaign.output


def run_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    """``batpolicy ARGS`` as a user runs it."""
    return subprocess.run([sys.executable, "-m", "batpolicy.scheduler.app.cli", *args],
                          capture_output=True, text=True, timeout=120)


def test_gantt_has_one_box_per_allocated_interval_of_each_job(finished: Path) -> None:
    runs = sorted((finished / "runs").iterdir())
    assert runs
    for run in runs:  # every run: some have rejected jobs, which have no box
        with (run / "jobs.csv").open() as f:
            jobs = list(csv.DictReader(f))
        boxes, owners = gantt_boxes(jobs)
        placed = {i for i, j in enumerate(jobs) if j["allocated_resources"]}
        expected = sum(len(jobs[i]["allocated_resources"].split()) for i in placed)
        assert len(boxes) == expected and set(owners) == placed
        for box, owner in zip(boxes, owners, strict=True):
            job = jobs[owner]
            assert box[0][0] == float(job["starting_time"])
            assert box[1][0] == float(job["finish_time"])


@pytest.mark.parametrize(("args", "name", "magic"), [
    (["--dist"], "d.png", b"\x89PNG"),
    (["--line", "max_jobs", "--metric", "mean_waiting_time"], "l.svg", b"<?xml"),
    (["--heatmap", "theta", "seed", "--metric", "mean_bounded_slowdown", "--policy",
      "redirection"], "h.png", b"\x89PNG"),
])
def test_campaign_plots_are_written(finished: Path, tmp_path: Path, args: list[str],
                                    name: str, magic: bytes) -> None:
    out = tmp_path / name
    result = run_cli(["plot", str(finished), *args, "-o", str(out)])
    assert result.returncode == 0, result.stderr
    assert out.read_bytes().startswith(magic) and out.stat().st_size > 5000


def test_gantt_of_a_run_folder(finished: Path, tmp_path: Path) -> None:
    run = next((finished / "runs").iterdir())
    result = run_cli(["plot", str(run), "--gantt", "-o", str(tmp_path / "g.png")])
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "g.png").read_bytes().startswith(b"\x89PNG")


def test_an_unknown_metric_is_one_error_naming_the_columns(finished: Path) -> None:
    result = run_cli(["plot", str(finished), "--line", "max_jobs", "--metric", "nope"])
    assert result.returncode == 1
    assert "no column 'nope'" in result.stderr and "Traceback" not in result.stderr


def test_bars_against_a_baseline(finished: Path, tmp_path: Path) -> None:
    out = tmp_path / "b.png"
    result = run_cli(["plot", str(finished), "--bars", "--metric", "mean_waiting_time",
                      "--baseline", "fcfs", "-o", str(out)])
    assert result.returncode == 0, result.stderr
    assert out.read_bytes().startswith(b"\x89PNG")
    missing = run_cli(["plot", str(finished), "--bars", "--metric", "mean_waiting_time",
                       "--baseline", "nope"])
    assert missing.returncode == 1 and "baseline policy 'nope'" in missing.stderr


def test_line_by_a_column_with_flat_references() -> None:
    """Seed 003 Figs. 9-11: one line per label; a baseline without the x is flat."""
    from batpolicy.scheduler.app.plot import select, sweep_series

    rows = [{"label": "first-fit", "preset.bsbw_mbps": "250", "param.lslt": "1.0",
             "mean_turnaround_time": "300"},
            {"label": "first-fit", "preset.bsbw_mbps": "500", "param.lslt": "1.0",
             "mean_turnaround_time": "340"},
            {"label": "first-fit", "preset.bsbw_mbps": "500", "param.lslt": "0.6",
             "mean_turnaround_time": "999"},
            {"label": "migration-only", "preset.bsbw_mbps": "", "param.lslt": "",
             "mean_turnaround_time": "450"}]
    kept = select(rows, ["lslt=1,", "label=first-fit,migration-only"], Path("r.csv"))
    assert len(kept) == 3  # "1" matches "1.0", the empty value the baseline
    series, flat = sweep_series(kept, "preset.bsbw_mbps", "mean_turnaround_time", "label")
    assert {k: dict(v) for k, v in series.items()} == {"first-fit": {250.0: [300.0],
                                                                    500.0: [340.0]}}
    assert dict(flat) == {"migration-only": [450.0]}


def test_where_errors_are_one_line(finished: Path) -> None:
    for where, message in (("policy", "COLUMN=VALUE"), ("policy=nope", "no run matches"),
                           ("nope=1", "no column 'nope'")):
        result = run_cli(["plot", str(finished), "--line", "max_jobs", "--metric",
                          "mean_waiting_time", "--where", where])
        assert result.returncode == 1 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_line_by_where_log_y_is_written(finished: Path, tmp_path: Path) -> None:
    out = tmp_path / "l.png"
    result = run_cli(["plot", str(finished), "--line", "max_jobs", "--metric",
                      "mean_waiting_time", "--by", "policy", "--where", "policy=fcfs,easy",
                      "--log-y", "--title", "t", "-o", str(out)])
    assert result.returncode == 0, result.stderr
    assert out.read_bytes().startswith(b"\x89PNG")
