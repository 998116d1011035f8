"""The example job model (``simulator/jobmodels/examples/scaled_delay.py``), end to end.

Found by the registry as ``scaled-delay`` for being in the examples folder, it runs a
delay profile ``delay x slowdown`` (the profile's own ``slowdown``, else the model's
argument), capped by the walltime: ``jobs.csv``'s runtimes say so, on the bundled
default workload and on a workload whose profiles give their own factor.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batpolicy.app import cli
from batpolicy.errors import ConfigError
from batpolicy.io.inputs import DEFAULT_WORKLOAD, bundled
from batpolicy.simulator.jobmodels.examples.scaled_delay import ScaledDelayModel
from batpolicy.simulator.jobmodels.registry import (
    EXAMPLE_JOB_MODELS,
    JOB_MODELS,
    available_job_models,
    make_job_model,
)

from clirun import read_jobs, restore_logging  # noqa: F401


def test_the_registry_finds_the_example_by_its_file() -> None:
    assert EXAMPLE_JOB_MODELS["scaled-delay"] is ScaledDelayModel
    assert ScaledDelayModel.name == "scaled-delay" and "scaled-delay" not in JOB_MODELS
    assert available_job_models()["scaled-delay"] is ScaledDelayModel
    model = make_job_model("scaled-delay:1.5")
    assert isinstance(model, ScaledDelayModel) and model.slowdown == 1.5
    assert make_job_model("scaled-delay").slowdown == 1.0  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="wants a number"):
        make_job_model("scaled-delay:fast")
    with pytest.raises(ConfigError, match="must be > 0"):
        make_job_model("scaled-delay:0")


def test_jobs_run_their_delay_times_the_argument_capped_by_the_walltime(
        tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli.main(["simulate", "--policy", "fcfs", "--job-model", "scaled-delay:1.5",
                     "-o", str(out), "--quiet"]) == 0
    workload = json.loads(bundled(DEFAULT_WORKLOAD).read_text())
    delays = {name: p["delay"] for name, p in workload["profiles"].items()}
    jobs = read_jobs(out / "jobs.csv")
    assert len(jobs) == len(workload["jobs"])
    states = set()
    for job in jobs.values():
        scaled, walltime = delays[job["profile"]] * 1.5, float(job["requested_time"])
        killed = scaled >= walltime
        states.add(job["final_state"])
        assert job["final_state"] == ("COMPLETED_WALLTIME_REACHED" if killed
                                      else "COMPLETED_SUCCESSFULLY")
        assert float(job["execution_time"]) == pytest.approx(min(scaled, walltime), abs=1e-6)
    assert states == {"COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED"}


def test_a_profiles_own_slowdown_wins_over_the_argument(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps({
        "nb_res": 4,
        "jobs": [{"id": "plain", "subtime": 0, "res": 1, "profile": "plain"},
                 {"id": "slow", "subtime": 0, "res": 1, "profile": "slow"}],
        "profiles": {"plain": {"type": "delay", "delay": 10},
                     "slow": {"type": "delay", "delay": 10, "slowdown": 3}}}))
    out = tmp_path / "out"
    assert cli.main(["simulate", "--policy", "fcfs", "-w", str(path), "--nb-res", "4",
                     "--job-model", "scaled-delay:1.5", "-o", str(out), "--quiet"]) == 0
    jobs = read_jobs(out / "jobs.csv")
    assert jobs["plain"]["execution_time"] == "15.000000"
    assert jobs["slow"]["execution_time"] == "30.000000"
