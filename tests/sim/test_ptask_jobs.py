"""Batsim's jobs as SimGrid parallel tasks in ``simulate``: what a user sees.

The reference is real Batsim 4.2.1 with batsched 1.4 ``fcfs`` on Batsim's own
``small_platform.xml`` and ``test_various_profile_types.json`` (vendored in
``tests/data/batsim421``: ``parallel`` with a com matrix, ``parallel_homogeneous`` with and
without computation or communication, ``parallel_homogeneous_total`` on 2 and 4 machines,
a composed profile repeated 4 times, a job reaching its 1 s walltime). Our ``fcfs`` makes
batsched's decisions, so jobs.csv must be Batsim's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batpolicy.app import cli
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.xml import read_platform
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.simulator import SimOptions
from batpolicy.simulator.latency.driver import make_simulator

from clirun import read_jobs, restore_logging  # noqa: F401  (autouse fixture)

DATA = Path(__file__).resolve().parents[1] / "data" / "batsim421"
SMALL = DATA / "small_platform.xml"
FIELDS = ("starting_time", "finish_time", "execution_time", "final_state",
          "allocated_resources")


def test_simulate_gives_batsims_jobs_for_communicating_profiles(tmp_path: Path) -> None:
    out = tmp_path / "out"
    status = cli.main(["simulate", "--policy", "fcfs", "-p", str(SMALL), "-w",
                       str(DATA / "test_various_profile_types.json"), "-o", str(out),
                       "--quiet"])
    assert status == 0
    ours = read_jobs(out / "jobs.csv")
    batsim = read_jobs(DATA / "fcfs-various_profile_types-small_platform.jobs.csv")
    assert sorted(ours) == sorted(batsim)
    for job_id, row in batsim.items():
        assert {f: ours[job_id][f] for f in FIELDS} == {f: row[f] for f in FIELDS}, job_id


@pytest.mark.parametrize("platform", ["vivaldi_hosts", "vivaldi_peers"])
def test_simulate_gives_batsims_jobs_on_vivaldi_platforms(tmp_path: Path, platform: str
                                                          ) -> None:
    """Vivaldi routing (Batsim's ``*_no_net`` platforms): coordinates make latencies.

    Hosts with coordinates only (a route is the coordinates' latency, no link), and
    ``peer`` hosts with their own up and down links; the reference is real Batsim 4.2.1
    with batsched 1.4 ``fcfs`` on each platform.
    """
    out = tmp_path / "out"
    status = cli.main(["simulate", "--policy", "fcfs", "-p", str(DATA / f"{platform}.xml"),
                       "-w", str(DATA / "test_various_profile_types.json"), "-o", str(out),
                       "--quiet"])
    assert status == 0
    ours = read_jobs(out / "jobs.csv")
    batsim = read_jobs(DATA / f"fcfs-various_profile_types-{platform}.jobs.csv")
    assert sorted(ours) == sorted(batsim)
    for job_id, row in batsim.items():
        assert {f: ours[job_id][f] for f in FIELDS} == {f: row[f] for f in FIELDS}, job_id


def _run(tmp_path: Path, profiles: dict, res: int = 2, platform: Path = SMALL
         ) -> tuple[int, str]:
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 4, "jobs": [
        {"id": "j", "subtime": 0, "walltime": 100, "res": res, "profile": "p"}],
        "profiles": profiles}))
    status = cli.main(["simulate", "--policy", "fcfs", "-p", str(platform), "-w",
                       str(workload), "-o", str(tmp_path / "out"), "--quiet"])
    return status, str(workload)


@pytest.mark.parametrize(("profile", "message"), [
    ({"type": "parallel", "cpu": [1e6, 1e6], "com": [0, 1e6, 1e6]},
     "'com' array has 3 values, 'cpu' has 2 so 'com' needs 2 x 2 = 4"),
    ({"type": "parallel", "cpu": [1e6, -1], "com": [0, 0, 0, 0]},
     "'cpu' array is invalid: all its values must be numbers >= 0, value 1 is -1"),
    ({"type": "parallel_homogeneous", "cpu": 1e6, "com": -5},
     "negative 'com' field (-5)"),
    ({"type": "data_staging", "nb_bytes": 1e6, "from": "pfs"},
     "needs a string 'to' field"),
])
def test_bad_profile_is_one_error_naming_file_and_profile(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], profile: dict, message: str
        ) -> None:
    status, workload = _run(tmp_path, {"p": profile})
    assert status != 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    # one style for every profile error, the reader's: the field under "profiles" (the
    # simulator's checks named the job's profile 'w0!p' instead)
    where = "'w0!p'" if profile["type"] == "data_staging" else "'profiles.p."
    assert workload in err[0] and where in err[0] and message in err[0], err[0]


def test_profile_sized_for_another_allocation_is_refused_at_execution(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Batsim aborts when a ``parallel`` profile's size is not the allocation's."""
    status, _ = _run(tmp_path, {"p": {"type": "parallel", "cpu": [1e6] * 3,
                                      "com": [0] * 9}}, res=2)
    assert status != 0
    err = capsys.readouterr().err
    assert "w0!p" in err and "is for 3 executors, the allocation has 2" in err
    assert (tmp_path / "out" / "jobs.csv").exists()  # what was written stays on disk


def test_storage_profile_without_storage_machine_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = _run(tmp_path, {"p": {"type": "parallel_homogeneous_pfs",
                                      "bytes_to_read": 1e6, "storage": "pfs"}})
    assert status != 0
    err = capsys.readouterr().err
    assert "w0!p" in err and "platform has 0 storage machines" in err


def test_route_through_an_undeclared_link_is_one_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    platform = tmp_path / "p.xml"
    platform.write_text(SMALL.read_text().replace('<link_ctn id="9"/>', '<link_ctn id="99"/>'))
    status, _ = _run(tmp_path, {"p": {"type": "parallel_homogeneous", "cpu": 1e6,
                                      "com": 1e6}}, platform=platform)
    assert status != 0
    err = [line for line in capsys.readouterr().err.splitlines() if "ERROR" in line]
    assert len(err) == 1 and str(platform) in err[0] and "link '99'" in err[0], err


# --------------------------------------------------------------------------- sharing
_TWO_HOSTS = """<?xml version='1.0'?>
<platform version="4.1"><zone id="AS0" routing="Full">
  <host id="master_host" speed="1Gf"><prop id="role" value="master"/></host>
  <host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>
  <link id="l" bandwidth="1GBps" latency="0s"/>
  <route src="a" dst="b"><link_ctn id="l"/></route>
</zone></platform>
"""


def _simulate(tmp_path: Path, decisions: dict[str, t.ExecuteJob], options: SimOptions,
              profiles: dict) -> dict[str, tuple[float, float]]:
    """Run jobs (all submitted at 0) with the given EXECUTE_JOBs; {job: (start, finish)}."""
    path = tmp_path / "p.xml"
    path.write_text(_TWO_HOSTS)
    platform = read_platform(path)
    jobs = [JobSpec(f"w0!{j}", 0.0, 2 if j == "mapped" else 1, "p" + j, None,
                    {"id": f"w0!{j}", "subtime": 0, "res": 2 if j == "mapped" else 1,
                     "profile": "p" + j}) for j in decisions]
    records: list = []

    def scheduler(request: t.Request) -> t.Reply:
        out = [decisions[e.job_id.split("!")[1]] for e in request.events
               if isinstance(e, t.JobSubmitted)]
        return t.Reply(request.now, tuple(out))

    make_simulator([Workload("w0", jobs, profiles, source=str(tmp_path / "w.json"))],
                   platform, options=options, on_record=records.append).run(scheduler)
    return {r.job_id.split("!")[1]: (r.start, r.finish) for r in records}


def test_compute_sharing_jobs_share_the_cpu(tmp_path: Path) -> None:
    """Two 1 Gflop jobs on one 1 Gflop/s machine: each gets half, both end at 2 s."""
    one = MachineSet.of(0)
    ends = _simulate(tmp_path, {"x": t.ExecuteJob("w0!x", one), "y": t.ExecuteJob("w0!y", one)},
                     SimOptions(compute_sharing=True),
                     {"px": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0},
                      "py": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0}})
    # the jobs start as EXECUTE_JOB's byte reaches Batsim's server (the latency driver)
    start = pytest.approx(0.0, abs=1e-6)
    assert ends == {"x": (start, pytest.approx(2.0)), "y": (start, pytest.approx(2.0))}


def test_executors_mapped_onto_one_machine_are_slowed(tmp_path: Path) -> None:
    """``mapping`` puts both executors of a 2-executor job on machine 1: twice as long."""
    ends = _simulate(tmp_path, {"mapped": t.ExecuteJob("w0!mapped", MachineSet.of(1),
                                                       mapping={0: 0, 1: 0})},
                     SimOptions(),
                     {"pmapped": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0}})
    assert ends == {"mapped": (pytest.approx(0.0, abs=1e-6), pytest.approx(2.0))}
