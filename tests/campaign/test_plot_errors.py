"""``batpolicy plot`` on what cannot be drawn: one clear line, no traceback, no file.

Issue 31 items 4 (no matplotlib), 9 (a non-numeric column), 10 (a run with no job).
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from batpolicy.app.cli import main
from batpolicy.io.outputs import JOBS_COLUMNS

from clirun import restore_logging  # noqa: F401  (autouse fixture)

#: Runs ``batpolicy ARGS`` with matplotlib unimportable, as after ``pip install .``.
_WITHOUT_MATPLOTLIB = """
import sys
sys.modules["matplotlib"] = None  # `import matplotlib` (and its submodules) now fails
from batpolicy.app.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def _errors(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The error lines the command wrote to stderr, without their prefix."""
    return [line.removeprefix("batpolicy: ERROR: ")
            for line in capsys.readouterr().err.splitlines() if "ERROR" in line]


def _results(path: Path) -> Path:
    """A campaign's results.csv over nstep's two modes (a text column) and two seeds."""
    path.mkdir()
    with (path / "results.csv").open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["policy", "workload", "status", "seed", "param.mode", "param.depth",
                      "stat.average_utility"])
        for mode in ("soft", "hard"):
            for seed in (1, 2):
                out.writerow(["nstep", "w.json", "ok", seed, mode, 2, 700 + seed])
    return path


def _run(path: Path, rows: list[dict[str, str]]) -> Path:
    """A run folder whose jobs.csv has these rows (Batsim's columns, the rest empty)."""
    path.mkdir()
    with (path / "jobs.csv").open("w", newline="") as f:
        out = csv.DictWriter(f, JOBS_COLUMNS, restval="")
        out.writeheader()
        out.writerows(rows)
    return path


@pytest.mark.parametrize("mode", [["--gantt"], ["--dist"], ["--bars", "--metric", "x"],
                                  ["--line", "depth", "--metric", "x"],
                                  ["--heatmap", "depth", "seed", "--metric", "x"],
                                  ["--scatter", "depth", "seed"]])
def test_every_plot_without_matplotlib_names_the_extra(tmp_path: Path,
                                                       mode: list[str]) -> None:
    run = _run(tmp_path / "run", [{"job_id": "1", "starting_time": "0", "finish_time": "5",
                                   "allocated_resources": "0-1"}])
    done = subprocess.run([sys.executable, "-c", _WITHOUT_MATPLOTLIB, "plot", str(run), *mode,
                           "-o", str(tmp_path / "p.png")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "batpolicy: ERROR: plots need matplotlib: pip install 'batpolicy[plot]'"]
    assert not (tmp_path / "p.png").exists()


@pytest.mark.parametrize(("args", "column", "hint"), [
    (["--line", "mode", "--metric", "stat.average_utility"], "param.mode", "--bars --by mode"),
    (["--heatmap", "mode", "seed", "--metric", "average_utility"], "param.mode", "--where"),
    (["--line", "depth", "--metric", "policy"], "policy", "numeric column"),
])
def test_a_text_column_is_named_as_not_numeric(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               args: list[str], column: str, hint: str) -> None:
    pytest.importorskip("matplotlib")
    results = _results(tmp_path / "res")
    out = tmp_path / "p.png"
    assert main(["plot", str(results), *args, "-o", str(out)]) == 1
    [error] = _errors(capsys)
    assert f"column '{column}' is not numeric (e.g. " in error and hint in error
    assert "no row has" not in error and not out.exists()


def test_heatmap_of_a_policy_without_runs_is_one_line(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    results = _results(tmp_path / "res")
    assert main(["plot", str(results), "--heatmap", "depth", "seed", "--metric",
                 "average_utility", "--policy", "easy", "-o", str(tmp_path / "h.png")]) == 1
    [error] = _errors(capsys)
    assert "no finished run of policy 'easy'" in error


@pytest.mark.parametrize(("rows", "says"), [
    ([], "jobs.csv lists no job"),
    ([{"job_id": "1", "final_state": "REJECTED"}],
     "none of its 1 job(s) ran (no allocated_resources)"),
])
def test_gantt_of_a_run_without_jobs_writes_nothing(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    rows: list[dict[str, str]],
                                                    says: str) -> None:
    pytest.importorskip("matplotlib")
    run = _run(tmp_path / "run", rows)
    out = tmp_path / "g.png"
    assert main(["plot", str(run), "--gantt", "-o", str(out)]) == 1
    [error] = _errors(capsys)
    assert error == f"{run / 'jobs.csv'}: no job to draw: {says}"
    assert not out.exists()


@pytest.mark.parametrize(("args", "says"), [
    (["--dist", "--tau", "-1", "-o", "{tmp}/d.png"],
     "--tau must be a finite number of seconds > 0, got -1"),
    (["--gantt", "-o", "{tmp}/a_file/g.png"], "cannot create the folder {tmp}/a_file: File exists"),
])
def test_bad_plot_options_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       args: list[str], says: str) -> None:
    pytest.importorskip("matplotlib")
    run = _run(tmp_path / "run", [{"job_id": "1", "starting_time": "0", "finish_time": "5",
                                   "execution_time": "5", "waiting_time": "0",
                                   "allocated_resources": "0-1"}])
    (run / "metrics.json").write_text('{"policy": "easy"}')
    (tmp_path / "a_file").write_text("")
    assert main(["plot", str(run), *[a.format(tmp=tmp_path) for a in args]]) == 1
    assert _errors(capsys) == [says.format(tmp=tmp_path)]
