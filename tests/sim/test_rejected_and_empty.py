"""Issue 31, items 6 and 7: rejected jobs are said loudly; an empty workload is an error.

A run whose jobs are all rejected (no walltime under EASY or conservative backfilling,
a job asking for 0 machines) used to end with exit 0, no warning and means of 0.0 that
look like results; a workload without jobs likewise. Now: one WARNING saying how many
jobs were rejected, why, and which option runs them, a summary that shows it; and no
job at all is one error line naming the file, with a non-zero exit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batpolicy.app.cli import main

from clirun import restore_logging  # noqa: F401  (autouse fixture)


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if "WARNING" in line]


@pytest.fixture(scope="module")
def nstep_workload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``workload synth --preset nstep-exp2``: its jobs have no walltime."""
    path = tmp_path_factory.mktemp("nstep") / "w.json"
    assert main(["workload", "synth", "--preset", "nstep-exp2", "--param", "nb_jobs=20",
                 "-o", str(path)]) == 0
    return path


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_jobs_rejected_for_lack_of_walltime_are_warned_about_once(
        policy: str, nstep_workload: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["simulate", "--policy", policy, "-w", str(nstep_workload), "-o",
                 str(tmp_path), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    total = metrics["nb_jobs"]
    assert metrics["nb_jobs_rejected"] == total > 0
    assert metrics["rejected_by_reason"] == {"no_walltime": total}
    warnings = _warnings(err)
    assert len(warnings) == 1, err
    assert f"policy '{policy}' rejected {total} of {total} jobs" in warnings[0]
    assert "without a walltime" in warnings[0] and "--param no_walltime=run" in warnings[0]
    assert "--exact-walltime" in warnings[0]
    # the summary shows the rejections, and no mean of zero that would look like a result
    assert "rejected" in out and "no job ran" in out


def test_the_options_the_warning_names_run_the_jobs(nstep_workload: Path,
                                                    tmp_path: Path) -> None:
    for name, extra in (("run", ["--param", "no_walltime=run"]), ("exact", ["--exact-walltime"])):
        assert main(["simulate", "-w", str(nstep_workload), "-o", str(tmp_path / name), "-q",
                     *extra]) == 0
        metrics = json.loads((tmp_path / name / "metrics.json").read_text())
        assert metrics["nb_jobs_rejected"] == 0 and "rejected_by_reason" not in metrics


def test_a_job_asking_for_no_machine_is_warned_about(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 4, "profiles": {"p": {"type": "delay",
                                                                     "delay": 5}},
                                    "jobs": [{"id": "0", "subtime": 0, "res": 0,
                                              "walltime": 10, "profile": "p"},
                                             {"id": "1", "subtime": 0, "res": 1,
                                              "walltime": 10, "profile": "p"}]}))
    capsys.readouterr()
    assert main(["simulate", "-w", str(workload), "-o", str(tmp_path / "out"), "-q"]) == 0
    warnings = _warnings(capsys.readouterr().err)
    assert len(warnings) == 1 and "rejected 1 of 2 jobs: 1 asking for 0 machines" in \
        warnings[0], warnings


def test_a_run_without_rejections_warns_nothing(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["simulate", "--max-jobs", "30", "-o", str(tmp_path), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert not _warnings(err) and "no job ran" not in out
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["complete"] is True and metrics["stopped_by"] is None


@pytest.mark.parametrize("kind", ["swf-header-only", "json-no-job"])
@pytest.mark.parametrize("command", ["simulate", "fake-batsim"])
def test_an_empty_workload_is_one_error_naming_the_file(
        kind: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if kind == "swf-header-only":
        path = tmp_path / "empty.swf"
        path.write_text("; Version: 2.2\n; MaxJobs: 0\n; MaxProcs: 16\n")
    else:
        path = tmp_path / "empty.json"
        path.write_text('{"nb_res": 4, "jobs": [], "profiles": {}}')
    capsys.readouterr()
    argv = [command, "-w", str(path), "-o", str(tmp_path / "out")]
    if command == "fake-batsim":  # refused before any connection is tried
        argv += ["-s", "tcp://127.0.0.1:9", "--timeout", "1"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "ERROR" in line]
    assert errors == [f"batpolicy: ERROR: no job in {path}: nothing to simulate"], err
    assert not (tmp_path / "out" / "metrics.json").exists()


def test_a_selection_that_keeps_no_job_says_so(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["simulate", "--start", "1e9", "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "no job left in" in err and "after the selection" in err and "--start" in err
