"""Every registered policy, run with its defaults, gives the same jobs.csv on any machine.

Issue 31, item 1: a search cut by wall-clock time stops at another node on a faster or
busier machine, so the same inputs gave two schedules. Each policy runs twice on inputs
suited to it (its job model, a small generated or bundled workload, a platform from
``bench/campaigns/inputs``) through the campaign's run task (the product's readers,
simulator and outputs): once on the real clock, once on a clock that advances one second
per reading (a machine a thousand times slower, or a very busy one). Defaults bounded by
counted work (nodes, rounds) give byte-identical jobs.csv; a default wall-clock bound
would not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from batpolicy.app.campaign.spec import RunSpec
from batpolicy.app.campaign.task import run_dir, run_task
from batpolicy.policies.registry import POLICIES
from batpolicy.scheduler import contract  # where Policy gets its wall clock
from batpolicy.scheduler.clock import MockClock

INPUTS = Path(__file__).resolve().parents[2] / "bench" / "campaigns" / "inputs"
BUNDLED: dict[str, Any] = {"max_jobs": 120}  # the bundled workload and platform

#: Inputs per policy: the job model it needs and a small workload where it searches.
SETUPS: dict[str, dict[str, Any]] = {
    "fcfs": BUNDLED, "easy": BUNDLED, "easy-edc5": BUNDLED, "conservative": BUNDLED,
    "dpsa-p": BUNDLED, "dpsa-n": BUNDLED, "dpsa-w": BUNDLED,
    "redirection": BUNDLED,
    "edf": {"preset": "tabu-4", "preset_params": (("nb_jobs", 120), ("nb_machines", 12)),
            "job_model": "speed", "seed": 2},
    "mt-edf": {"preset": "tabu-4", "preset_params": (("nb_jobs", 120), ("nb_machines", 12)),
               "job_model": "speed", "seed": 2},
    "tabu": {"preset": "tabu-4", "preset_params": (("nb_jobs", 120), ("nb_machines", 12)),
             "job_model": "speed", "seed": 2},
    "nstep": {"preset": "nstep-exp1", "preset_params": (("nb_jobs", 30),),
              "platform": str(INPUTS / "racks_4x6_gpu1.xml"), "job_model": "placement",
              "seed": 1},  # soft mode; searches of up to ~1,000 nodes
    "coalloc": {"preset": "coalloc-4.3",
                "preset_params": (("clusters", 2), ("jobs", 120)),
                "platform": str(INPUTS / "mc2x100_1gbps.xml"), "job_model": "bandwidth",
                "seed": 1},
    "poweroff": {"max_jobs": 120, "platform": str(INPUTS / "energy128.xml"),
                 "flags": (("energy", True),)},
}


def test_every_registered_policy_has_inputs_here() -> None:
    """A policy added to the registry must be added to this test too."""
    assert sorted(SETUPS) == sorted(POLICIES)


def _jobs_csv(spec: RunSpec, out: Path) -> bytes:
    row = run_task(spec, str(out))
    assert row["status"] == "ok", row.get("error")
    return (run_dir(out, spec) / "jobs.csv").read_bytes()


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_defaults_give_the_same_jobs_csv_on_a_slow_machine(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = RunSpec(name, **SETUPS[name])
    fast = _jobs_csv(spec, tmp_path / "fast")
    monkeypatch.setattr(contract, "WallClock", lambda: MockClock(step=1.0))
    slow = _jobs_csv(spec, tmp_path / "slow")
    assert fast.count(b"\n") > 20  # the run scheduled jobs
    assert slow == fast, f"{name}: jobs.csv depends on the machine's speed"


@pytest.mark.parametrize("name, params", [
    ("nstep", (("time_bound_ms", 50.0),)),
    ("dpsa-p", (("search", "exhaustive"), ("time_bound_ms", 50.0))),
    ("tabu", (("time_bound_ms", 20.0),)),
])
def test_a_wall_clock_bound_is_recorded_as_not_reproducible(
        name: str, params: tuple[tuple[str, Any], ...], tmp_path: Path) -> None:
    spec = RunSpec(name, params=params, **SETUPS[name])
    row = run_task(spec, str(tmp_path))
    metrics = json.loads((run_dir(tmp_path, spec) / "metrics.json").read_text())
    assert metrics["policy_stats"]["reproducible"] is False
    assert metrics["policy_stats"]["nondeterministic_bound"] == \
        f"time_bound_ms={dict(params)['time_bound_ms']}"
    assert row["stat.reproducible"] is False  # and in a campaign's results table
    default = run_task(RunSpec(name, **SETUPS[name]), str(tmp_path / "default"))
    assert "stat.reproducible" not in default
