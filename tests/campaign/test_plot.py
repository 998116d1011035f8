"""``batpolicy plot``: every kind of picture is written from a real run and campaign."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from batpolicy.app.campaign.executors import LocalPool  # noqa: E402
from batpolicy.app.campaign.runner import run_campaign  # noqa: E402
from batpolicy.app.campaign.spec import load_campaign  # noqa: E402
from batpolicy.app.plot import gantt_boxes  # noqa: E402


@pytest.fixture
def finished(small_campaign: Path) -> Path:
    campaign = load_campaign(small_campaign)
    run_campaign(campaign, LocalPool(2), progress=False)
    return campaign.output


def run_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    """``batpolicy ARGS`` as a user runs it."""
    return subprocess.run([sys.executable, "-m", "batpolicy.app.cli", *args],
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
    from batpolicy.app.plot import select, sweep_series

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


def _tradeoff_tables(tmp_path: Path) -> tuple[Path, Path]:
    """A campaign's results table and a table of runs made beside real Batsim.

    Two workloads, two labels, tau 0 and 60, an EASY baseline; the second table as the
    energy trade-off's batsched.csv.
    """
    campaign = tmp_path / "campaign"
    campaign.mkdir()
    with (campaign / "results.csv").open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["status", "label", "policy", "workload", "param.idle_timeout",
                      "consumed_joules", "mean_bounded_slowdown"])
        for w, scale in (("KTH.swf.gz", 1.0), ("HPC2N.swf", 3.0)):
            for label, bsld in (("keep 0 %", 9.0), ("keep 25 %", 5.0)):
                out.writerow(["ok", label, "poweroff", w, 60, 2e9 * scale, bsld - 2])
                out.writerow(["ok", label, "poweroff", w, 0, 1e9 * scale, bsld])
            out.writerow(["ok", "EASY (never off)", "easy", w, "", 4e9 * scale, 3.0])
        out.writerow(["error", "keep 0 %", "poweroff", "KTH.swf.gz", 300, "", ""])
    batsched = tmp_path / "batsched.csv"
    batsched.write_text("policy,label,workload,status,param.idle_timeout,consumed_joules,"
                        "mean_bounded_slowdown\nbatsched:energy_bf_idle_sleeper,batsched idle "
                        "sleeper,KTH.swf.gz,ok,300,1.5e9,12.0\n")
    return campaign, batsched


def test_tradeoff_scatter_of_a_campaign_and_a_batsched_table(tmp_path: Path) -> None:
    from batpolicy.app.plot import _merged_results, tradeoff_series

    campaign, batsched = _tradeoff_tables(tmp_path)
    rows = _merged_results([campaign, batsched])
    assert len(rows) == 11  # the failed run is left out
    series, refs = tradeoff_series([r for r in rows if r["workload"] == "KTH.swf.gz"],
                                   "consumed_joules", "mean_bounded_slowdown", "label",
                                   "param.idle_timeout")
    # each curve in the order of tau, tagged with it; EASY, without tau, a reference
    assert series["keep 0 %"] == [(1e9, 9.0, "0"), (2e9, 7.0, "60")]
    assert series["batsched idle sleeper"] == [(1.5e9, 12.0, "300")]
    assert refs == {"EASY (never off)": (4e9, 3.0)}
    out = tmp_path / "t.png"
    result = run_cli(["plot", str(campaign), str(batsched), "--scatter", "consumed_joules",
                      "mean_bounded_slowdown", "--by", "label", "--order", "idle_timeout",
                      "--log-y", "-o", str(out)])
    assert result.returncode == 0, result.stderr
    assert out.read_bytes().startswith(b"\x89PNG") and out.stat().st_size > 5000


def test_tradeoff_scatter_of_text_columns_is_one_error(tmp_path: Path) -> None:
    campaign, _ = _tradeoff_tables(tmp_path)
    result = run_cli(["plot", str(campaign), "--scatter", "label", "mean_bounded_slowdown",
                      "-o", str(tmp_path / "t.png")])
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "column 'label' is not numeric" in result.stderr
    assert not (tmp_path / "t.png").exists()
