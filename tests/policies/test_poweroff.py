"""The power-off layer (policies/poweroff.py) in the embedded simulator with energy on.

Platform: Batsim's energy_platform_homogeneous_no_net_128.xml (vendored, gzipped): 95 W
idle, 9.75 W asleep, 6.1 s to switch off, 151.52 s to switch on.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from batpolicy.app.cli import main
from batpolicy.io.result import SimResult
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.model import Platform
from batpolicy.platforms.xml import read_platform
from batpolicy.policies.registry import make_policy
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.state import ClusterState
from batpolicy.simulator import SimOptions, Simulator

from clirun import free_port, restore_logging  # noqa: F401  (autouse: the CLI's handlers removed)

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


def run(policy: str, platform_path: Path, w: Workload | None = None,
        **params: object) -> SimResult:
    """``policy`` with ``params`` on ``w`` (default: :func:`workload`), with Batsim's -E."""
    platform = read_platform(platform_path)
    state = ClusterState(platform_file=platform)
    handle = Dispatcher(make_policy(policy, params), state).handle
    sim = Simulator([w if w is not None else workload()], platform,
                    options=SimOptions(energy=True))
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


def test_a_job_arriving_while_others_run_wakes_sleeping_machines(platform_path: Path) -> None:
    """A job arriving while the awake machines are busy waits one switch-on, not their end.

    A long job holds 64 machines, the other 64 sleep; a 32-machine job then waits 151.52 s.
    """
    jobs = [JobSpec("w0!0", 0.0, 64, "long", 20000.0,
                    {"id": 0, "subtime": 0.0, "res": 64, "walltime": 20000.0, "profile": "long"}),
            JobSpec("w0!1", 1000.0, 32, "d", 200.0,
                    {"id": 1, "subtime": 1000.0, "res": 32, "walltime": 200.0, "profile": "d"})]
    w = Workload("w0", jobs, {"long": {"type": "delay", "delay": 10000.0},
                              "d": {"type": "delay", "delay": 100.0}})
    result = run("poweroff", platform_path, w, idle_timeout=30.0)
    starts = {r.job_id: r.start for r in result.records}
    assert starts["w0!1"] == pytest.approx(1000.0 + 151.52)


def test_the_head_is_woken_for_its_reservation(platform_path: Path) -> None:
    """A head larger than the awake machines gets the sleeping ones woken at once.

    Job A holds 64 machines until 10,000 s; the other 64 sleep. The head H (128 machines)
    arrives at 1,000 s, then a 1-machine job S with a long walltime: the layer wakes the
    64 sleeping machines for H then (not when A ends, 151.52 s too late), so EASY's
    reservation for H holds at A's end, and S, which would end after it, waits behind H.
    """
    def job(i: int, t: float, res: int, profile: str, walltime: float) -> JobSpec:
        return JobSpec(f"w0!{i}", t, res, profile, walltime, {
            "id": i, "subtime": t, "res": res, "walltime": walltime, "profile": profile})

    w = Workload("w0", [job(0, 0.0, 64, "a", 20000.0), job(1, 1000.0, 128, "h", 200.0),
                        job(2, 1001.0, 1, "s", 30000.0)],
                          {"a": {"type": "delay", "delay": 10000.0},
                  "h": {"type": "delay", "delay": 100.0},
                  "s": {"type": "delay", "delay": 15000.0}})
    result = run("poweroff", platform_path, w, idle_timeout=30.0)
    starts = {r.job_id: r.start for r in result.records}
    assert starts["w0!1"] == pytest.approx(10000.0)
    assert starts["w0!2"] >= 10100.0  # type: ignore[operator]


def test_without_an_energy_platform_the_inner_policy_schedules_alone(
        caplog: pytest.LogCaptureFixture) -> None:
    def jobs_of(policy: str) -> list[tuple[object, ...]]:
        sim = Simulator([workload()], Platform.homogeneous(128))
        result = sim.run(Dispatcher(make_policy(policy), ClusterState()).handle)
        return [(r.job_id, r.start, r.alloc) for r in result.records]

    assert jobs_of("poweroff") == jobs_of("easy")
    assert "no sleep_pstates" in caplog.text


BATSIM = Path(os.environ.get("BATSIM", "/opt/batsim-4.2.1/bin/batsim"))
#: The platforms of the comparison: Batsim's own, zero-latency (Vivaldi) and 50 µs links.
PLATFORMS = ("no_net", "cluster")


def _energy_rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))[1:]


@pytest.mark.batsim
@pytest.mark.skipif(not BATSIM.is_file(), reason=f"no Batsim at {BATSIM}")
@pytest.mark.parametrize("which", PLATFORMS)
def test_serve_beside_real_batsim_with_energy_equals_simulate(which: str, platform_path: Path,
                                                              tmp_path: Path) -> None:
    """``serve --policy poweroff`` beside Batsim -E writes what ``simulate --energy`` writes.

    Same inputs, same parameters: Batsim's jobs.csv, pstate_changes.csv and
    machine_states.csv are simulate's byte for byte, and its consumed_energy.csv rows
    (times, kinds, wattmin, epower) and schedule.csv energy figures are simulate's; the
    energies agree to the joule's last printed digit on the zero-latency platform and
    within 1e-12 (relative) with latencies, where the last digit of a few rows differs.
    """
    platform = platform_path if which == "no_net" else DATA / "cluster_energy_128.xml"
    w = workload()
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"nb_res": 128, "jobs": [j.raw for j in w.jobs],
                                "profiles": w.profiles}))
    params = ["--param", "idle_timeout=30", "--param", "keep_awake=16"]
    port = free_port()
    serve = subprocess.Popen([sys.executable, "-m", "batpolicy", "serve", "--policy",
                              "poweroff", *params, "--socket-endpoint",
                              f"tcp://127.0.0.1:{port}", "--timeout", "60"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        batsim = subprocess.run([str(BATSIM), "-p", str(platform), "-w", str(path), "-E",
                                 "-e", str(tmp_path / "b"), "-s", f"tcp://127.0.0.1:{port}"],
                                capture_output=True, text=True, timeout=180)
        assert batsim.returncode == 0, batsim.stderr[-2000:]
        assert serve.wait(timeout=60) == 0, serve.communicate()[1][-2000:]
    finally:
        serve.kill()
        serve.communicate()
    assert main(["simulate", "--policy", "poweroff", *params, "-p", str(platform),
                 "-w", str(path), "-E", "-e", str(tmp_path / "s"), "--no-progress",
                 "-q"]) == 0
    for output in ("jobs", "pstate_changes", "machine_states"):
        assert (tmp_path / f"s_{output}.csv").read_text() == \
            (tmp_path / f"b_{output}.csv").read_text(), output
    theirs, ours = _energy_rows(tmp_path / "b_consumed_energy.csv"), \
        _energy_rows(tmp_path / "s_consumed_energy.csv")
    assert [(r[0], r[2], r[3]) for r in ours] == [(r[0], r[2], r[3]) for r in theirs]
    exact = which == "no_net"
    for a, b in zip(ours, theirs, strict=True):
        assert a[1] == b[1] if exact else float(a[1]) == pytest.approx(float(b[1]), rel=1e-12)
        if a[4] != "NA":
            assert float(a[4]) == pytest.approx(float(b[4]), rel=1e-9, abs=2e-6)
    with open(tmp_path / "s_schedule.csv") as f:
        mine = next(csv.DictReader(f))
    with open(tmp_path / "b_schedule.csv") as f:
        schedule = next(csv.DictReader(f))
    assert int(schedule["nb_machine_switches"]) > 0
    for column in ("nb_machine_switches", "nb_grouped_switches", "time_switching_off",
                   "time_switching_on", "time_sleeping", "time_idle", "makespan"):
        assert mine[column] == schedule[column], column
    assert float(mine["consumed_joules"]) == \
        pytest.approx(float(schedule["consumed_joules"]), rel=1e-12)
