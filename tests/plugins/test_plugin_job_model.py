"""A job model from another installed package: ``--job-model slowdown:3`` and the testing API.

The newcomer's path for a job model: one module in their own package and one entry
point in the group ``batpolicy.job_models``; nothing in batpolicy is edited. The test
builds that package, installs it with pip into a folder, and runs it as a user would.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from batpolicy.io.inputs import DEFAULT_WORKLOAD, bundled

PACKAGE = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "slowdown-model"
        version = "0.1"

        [project.entry-points."batpolicy.job_models"]
        slowdown = "slowdown_model:Slowdown"
        """,
    "slowdown_model.py": '''
        """Every job runs its delay times a factor (a user's own job model)."""
        from batpolicy.protocol.types import JobState
        from batpolicy.simulator.jobmodels.base import JobModel


        class Slowdown(JobModel):
            """A delay profile's job takes ``factor`` times its delay (2 unless given)."""

            name = "slowdown"

            def __init__(self, factor=2.0):
                self.factor = factor

            @classmethod
            def from_argument(cls, text):
                return cls(float(text))

            def start(self, job, now, ctx):
                job.outcome, job.return_code = JobState.COMPLETED_SUCCESSFULLY, 0
                return now + self.factor * float(job.profile_data["delay"])

            def progress(self, job, now, ctx):
                return {"profile_name": job.profile,
                        "progress": (now - job.start) / (job.end - job.start)}
        ''',
}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny package, pip-installed into a folder (no network, no build isolation)."""
    root = tmp_path_factory.mktemp("plugin")
    source = root / "slowdown-model"
    source.mkdir()
    for name, text in PACKAGE.items():
        (source / name).write_text(textwrap.dedent(text).lstrip())
    target = root / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-build-isolation", "--no-index", "--target", str(target),
                           str(source)], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        pytest.fail(f"cannot pip-install the test plug-in: {done.stderr[-2000:]}")
    return target


def _env(site: Path) -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{path}" if path else str(site)}


def test_an_installed_job_model_runs_with_job_model_slowdown(installed: Path,
                                                             tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "batpolicy.app.cli", "simulate",
                          "--policy", "fcfs", "--job-model", "slowdown:3", "-o", str(out),
                          "--no-progress", "--quiet"],
                         capture_output=True, text=True, env=_env(installed), timeout=120)
    assert run.returncode == 0, run.stderr
    workload = json.loads(bundled(DEFAULT_WORKLOAD).read_text())
    delays = {str(job["id"]): workload["profiles"][job["profile"]]["delay"]
              for job in workload["jobs"]}
    with (out / "jobs.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(delays) == 250
    for row in rows:
        assert float(row["execution_time"]) == pytest.approx(3 * delays[row["job_id"]],
                                                             abs=1e-5), row["job_id"]


def test_without_the_package_the_name_is_one_clear_error(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "batpolicy.app.cli", "simulate",
                          "--job-model", "slowdown", "-o", str(tmp_path / "out"),
                          "--no-progress"], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "unknown job model 'slowdown'" in run.stderr and "Traceback" not in run.stderr


def test_the_plugin_model_runs_under_the_testing_api(installed: Path) -> None:
    script = textwrap.dedent("""
        from batpolicy.testing import simulate
        s = simulate("fcfs", [(0, 1, 10), (0, 1, 5)], machines=1, job_model="slowdown")
        assert (s.start("0"), s.finish("0")) == (0.0, 20.0), (s.start("0"), s.finish("0"))
        assert (s.start("1"), s.finish("1")) == (20.0, 30.0)
        print("ok")
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=_env(installed), timeout=60)
    assert done.stdout.strip() == "ok", done.stderr
