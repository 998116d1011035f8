"""The power-off layer (policies/poweroff.py) in the embedded simulator with energy on.

Platform: Batsim's energy_platform_homogeneous_no_net_128.xml (vendored, gzipped): 95 W
idle, 9.75 W asleep, 6.1 s to switch off, 151.52 s to switch on.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from batpolicy.errors import BatpolicyError
from batpolicy.platforms.model import Platform
from batpolicy.platforms.xml import read_platform
from batpolicy.policies.registry import make_policy
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.io.model import JobSpec, Workload
from batpolicy.scheduler.io.result import SimResult
from batpolicy.scheduler.sim import SimOptions, Simulator
from batpolicy.scheduler.state import ClusterState

DATA = Path(__file__).resolve().parents[1] / "data" / "batsim421_energy"


@pytest.fixture(scope="module")
def platform_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("poweroff") / "energy128.xml"
    with gzip.open(DATA / "energy_platform_homogeneous_no_net_128.xml.gz", "rb") as src, \
            open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return target


def workload() -> Workload:
    """Bursts of 64-machine jobs of 100 s, 1000 s apart, with a 128-machine job among them."""
    jobs, t = [], 0.0
    for i in range(6):
        res = 128 if i == 3 else 64
        jobs.append(JobSpec(f"w0!{i}", t, res, "d", 200.0,
                            {"id": i, "subtime": t, "res": res, "walltime": 200.0,
                             "profile": "d"}))
        t += 1000.0
    return Workload("w0", jobs, {"d": {"type": "delay", "delay": 100.0}})


def run(policy: str, platform_path: Path, **params: object) -> SimResult:
    platform = read_platform(platform_path)
    state = ClusterState(platform_file=platform)
    handle = Dispatcher(make_policy(policy, params), state).handle
    sim = Simulator([workload()], platform, options=SimOptions(energy=True))
    return sim.run(handle)


def test_power_off_saves_energy_and_every_job_runs(platform_path: Path) -> None:
    easy = run("easy", platform_path)
    off = run("poweroff", platform_path, idle_timeout=30.0)
    assert all(r.final_state is JobState.COMPLETED_SUCCESSFULLY for r in off.records)
    assert len(off.records) == len(easy.records) == 6
    assert off.consumed_joules < 0.3 * easy.consumed_joules
    assert off.nb_machine_switches > 0
    # the machines wake when the queue needs them: a job waits at most one switch-on
    for record in off.records:
        assert record.start - record.submission_time <= 151.52 + 1e-6  # type: ignore[operator]


def test_keep_awake_machines_serve_at_once(platform_path: Path) -> None:
    off = run("poweroff", platform_path, idle_timeout=30.0, keep_awake=64)
    waits = {r.job_id: r.start - r.submission_time for r in off.records}  # type: ignore[operator]
    assert waits["w0!0"] == waits["w0!1"] == 0.0   # 64 machines stay awake
    assert waits["w0!3"] == pytest.approx(151.52)  # 128 machines: 64 must wake


def test_power_off_needs_an_energy_platform() -> None:
    sim = Simulator([workload()], Platform.homogeneous(128))
    with pytest.raises(BatpolicyError, match="sleep_pstates"):
        sim.run(Dispatcher(make_policy("poweroff"), ClusterState()).handle)
