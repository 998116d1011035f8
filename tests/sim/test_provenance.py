"""Issue 31, item 3: every metrics.json says where it came from (``provenance``).

The code (version, git commit and dirty flag in a checkout), the command line, each
input file's path, size and SHA-256, the selection and transforms, the seeds, the
interpreter and the start time; a campaign's table carries the same per run. The block
is the one part that changes between two runs of the same inputs: without it (and the
wall-clock figures) two runs' metrics.json are identical.
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from batpolicy import __version__
from batpolicy.app.campaign.executors import LocalPool
from batpolicy.app.campaign.runner import run_campaign
from batpolicy.app.campaign.spec import load_campaign
from batpolicy.app.campaign.task import TIMING_KEYS
from batpolicy.app.cli import main
from batpolicy.io.inputs import DEFAULT_PLATFORM, DEFAULT_WORKLOAD, bundled
from batpolicy.provenance import SOURCE_ROOT, source_revision

from clirun import restore_logging  # noqa: F401  (autouse fixture)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _head() -> str | None:
    """HEAD of the checkout batpolicy runs from, asked of git here (None: not a checkout)."""
    if shutil.which("git") is None or not (SOURCE_ROOT / ".git").exists():
        return None
    done = subprocess.run(["git", "-C", str(SOURCE_ROOT), "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def _simulate(tmp_path: Path, name: str, *extra: str) -> dict[str, Any]:
    workload, platform = bundled(DEFAULT_WORKLOAD), bundled(DEFAULT_PLATFORM)
    argv = ["simulate", "-w", str(workload), "-p", str(platform), "--max-jobs", "60",
            "--load", "1.5", "--sample", "0.5", "--sample-seed", "3", "-o",
            str(tmp_path / name), "-q", *extra]
    assert main(argv) == 0
    return json.loads((tmp_path / name / "metrics.json").read_text())


def test_simulate_records_code_command_inputs_transforms_seeds_and_start(tmp_path: Path
                                                                         ) -> None:
    source_revision.cache_clear()  # asked once per process: HEAD may have moved since
    before = datetime.now(UTC).replace(microsecond=0)
    prov = _simulate(tmp_path, "out")["provenance"]
    after = datetime.now(UTC)

    assert prov["batpolicy"]["version"] == __version__
    assert prov["batpolicy"]["commit"] == _head()
    assert isinstance(prov["batpolicy"]["dirty"], bool) or prov["batpolicy"]["commit"] is None
    assert prov["argv"][:2] == ["batpolicy", "simulate"] and "--load" in prov["argv"]
    workload, platform = bundled(DEFAULT_WORKLOAD), bundled(DEFAULT_PLATFORM)
    assert prov["inputs"] == [
        {"role": "w0", "path": str(workload.resolve()), "size": workload.stat().st_size,
         "sha256": _sha256(workload)},
        {"role": "platform", "path": str(platform.resolve()), "size": platform.stat().st_size,
         "sha256": _sha256(platform)}]
    options = prov["options"]
    assert (options["load"], options["sample"], options["max_jobs"]) == (1.5, 0.5, 60)
    assert options["weeks"] is None and options["exact_walltime"] is False
    assert prov["seeds"] == {"sample_seed": 3}
    assert prov["interpreter"].startswith(("CPython", "PyPy"))
    started = datetime.fromisoformat(prov["started_at"])
    assert started.utcoffset() == timedelta(0) and before <= started <= after


def test_two_runs_differ_only_in_provenance_and_wall_clock_figures(tmp_path: Path) -> None:
    first, second = _simulate(tmp_path, "a"), _simulate(tmp_path, "b")
    for metrics in (first, second):
        del metrics["provenance"]
        for key in TIMING_KEYS:
            metrics.pop(key, None)
    assert first == second
    assert (tmp_path / "a" / "jobs.csv").read_bytes() == (tmp_path / "b" / "jobs.csv").read_bytes()


def test_without_git_the_commit_is_none_and_the_run_goes_on(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no git to be found
    source_revision.cache_clear()
    try:
        prov = _simulate(tmp_path, "out")["provenance"]
    finally:
        source_revision.cache_clear()
    assert prov["batpolicy"] == {"version": __version__, "commit": None, "dirty": None}
    assert prov["inputs"][0]["sha256"] == _sha256(bundled(DEFAULT_WORKLOAD))


def test_a_campaign_table_carries_each_runs_provenance(tmp_path: Path) -> None:
    workload = tmp_path / "w.json"
    shutil.copy(bundled(DEFAULT_WORKLOAD), workload)
    path = tmp_path / "c.toml"
    path.write_text('[campaign]\noutput = "res"\n[[grid]]\npolicy = ["fcfs", "easy"]\n'
                    'workload = "w.json"\nnb_res = 128\nmax_jobs = 30\n'
                    'transform = { sample = 0.5, sample_seed = 4 }\n')
    source_revision.cache_clear()
    report = run_campaign(load_campaign(path), LocalPool(1), progress=False)
    with report.table.open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    for row in rows:
        assert row["prov.version"] == __version__
        assert row["prov.commit"] == (_head() or "")
        assert row["prov.w0_sha256"] == _sha256(workload)
        metrics = json.loads((tmp_path / "res" / "runs" / row["run_id"] /
                              "metrics.json").read_text())
        assert metrics["provenance"]["seeds"] == {"sample_seed": 4}
        assert metrics["provenance"]["options"]["transform"] == {"sample": 0.5,
                                                                 "sample_seed": 4}
    with (tmp_path / "res" / "timings.csv").open() as f:
        timings = list(csv.DictReader(f))
    # where and when a run ran differ between hosts: with the timings, not in the table
    assert all(t["prov.started_at"] and t["prov.interpreter"] for t in timings)
    assert "prov.started_at" not in rows[0] and "prov.interpreter" not in rows[0]
