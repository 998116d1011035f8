"""``usage_trace`` profiles in ``simulate``: what a user sees, and how the traces are read.

Batsim 4.2.1 (``jobs_execution.cpp``) runs one actor per rank of the trace on the job's
machines (ranks round-robin), each replaying its ``RANK m_usage USAGE FLOPS`` lines as
one-host parallel tasks of ``max(round(USAGE x cores), 1)`` executors of FLOPS each;
SimGrid's host-energy plugin reads the share of the host's cores in use. The figures
below are worked out by hand from those rules; real Batsim's own outputs are checked by
``tests/sim/test_energy_cluster_recorded.py`` (vendored recordings) and
``bench/fidelity/usage_trace_cases.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batpolicy.app import cli
from batpolicy.errors import InputError
from batpolicy.simulator.jobmodels.ptask.usage_trace import (
    UsageTrace,
    check_trace_field,
    read_usage_trace,
)

from clirun import read_jobs, restore_logging  # noqa: F401  (autouse fixture)

#: Two hosts of 4 cores at 1 Gflop/s: idle 10 W, 20 W at epsilon load, 100 W all cores;
#: links fast enough for the ranks' 4-byte messages to take picoseconds.
_PLATFORM = """<?xml version='1.0'?>
<platform version="4.1"><zone id="AS0" routing="Full">
  <host id="master_host" speed="1Gf"><prop id="role" value="master"/></host>
  <host id="a" speed="1Gf" core="4"><prop id="wattage_per_state" value="10:20:100"/>
    <prop id="wattage_off" value="1"/></host>
  <host id="b" speed="1Gf" core="4"><prop id="wattage_per_state" value="10:20:100"/>
    <prop id="wattage_off" value="1"/></host>
  <link id="l" bandwidth="1000TBps" latency="0s"/>
  <route src="a" dst="b"><link_ctn id="l"/></route>
  <route src="master_host" dst="a"><link_ctn id="l"/></route>
  <route src="master_host" dst="b"><link_ctn id="l"/></route>
</zone></platform>
"""


def _write(tmp_path: Path, ranks: list[str], walltime: float = 100.0,
           extra: dict | None = None) -> Path:
    """A one-job workload (2 machines) whose profile's ranks have these trace texts."""
    folder = tmp_path / "ut"
    folder.mkdir(exist_ok=True)
    for rank, text in enumerate(ranks):
        (folder / f"r{rank}.txt").write_text(text)
    (folder / "traces.txt").write_text("".join(f"r{r}.txt\n" for r in range(len(ranks))))
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 2, "jobs": [
        {"id": 1, "subtime": 0, "walltime": walltime, "res": 2, "profile": "p",
         **(extra or {})}],
        "profiles": {"p": {"type": "usage_trace", "trace": "ut/traces.txt"}}}))
    return workload


def _simulate(tmp_path: Path, workload: Path, energy: bool = True) -> tuple[int, Path]:
    platform = tmp_path / "p.xml"
    platform.write_text(_PLATFORM)
    out = tmp_path / "out"
    status = cli.main(["simulate", "--policy", "fcfs", "-p", str(platform), "-w",
                       str(workload), "-o", str(out), "--quiet", *(["-E"] if energy else [])])
    return status, out


def test_ranks_run_round_robin_and_energy_follows_the_cores_in_use(tmp_path: Path) -> None:
    """Ranks 0 and 2 share host a; the power follows the share of its 4 cores in use.

    Host a: rank 0 on 2 cores and rank 2 on 1 (usage 0 still takes one) for 1 s, load
    3/4 (20 + 0.75 x 80 = 80 W), then rank 0 on all 4 cores for 2 s (100 W): 280 J.
    Host b: rank 1 on 1 core for 1 s (40 W), then idle for 2 s (10 W): 60 J.
    """
    workload = _write(tmp_path, ["0 m_usage 0.5 1e9\n0 m_usage 1 2e9\n",
                                 "1 m_usage 0.25 1e9\n",
                                 "2 m_usage 0 1e9\n"])
    status, out = _simulate(tmp_path, workload)
    assert status == 0
    job = read_jobs(out / "jobs.csv")["1"]
    assert job["final_state"] == "COMPLETED_SUCCESSFULLY"
    assert float(job["execution_time"]) == pytest.approx(3.0, abs=1e-6)
    assert float(job["consumed_energy"]) == pytest.approx(340.0, abs=1e-4)


def test_more_executors_than_cores_share_the_host(tmp_path: Path) -> None:
    """Two ranks asking for all 4 cores of host a get half of them each: 2 s, not 1."""
    workload = _write(tmp_path, ["0 m_usage 1 1e9\n", "1 m_usage 0 1\n", "2 m_usage 1 1e9\n"])
    status, out = _simulate(tmp_path, workload, energy=False)
    assert status == 0
    job = read_jobs(out / "jobs.csv")["1"]
    assert float(job["execution_time"]) == pytest.approx(2.0, abs=1e-6)
    assert float(job["consumed_energy"]) == -1.0  # no -E


def test_smpi_ranks_to_hosts_mapping_places_the_ranks(tmp_path: Path) -> None:
    """The job's mapping puts both ranks on its second machine: they share host b."""
    workload = _write(tmp_path, ["0 m_usage 1 1e9\n", "1 m_usage 1 1e9\n"],
                      extra={"smpi_ranks_to_hosts_mapping": [1, 1]})
    status, out = _simulate(tmp_path, workload)
    assert status == 0
    job = read_jobs(out / "jobs.csv")["1"]
    assert float(job["execution_time"]) == pytest.approx(2.0, abs=1e-6)
    # host a idle 2 s (20 J), host b all cores 2 s (200 J)
    assert float(job["consumed_energy"]) == pytest.approx(220.0, abs=1e-4)


def test_walltime_kills_the_ranks(tmp_path: Path) -> None:
    workload = _write(tmp_path, ["0 m_usage 1 5e9\n", "1 m_usage 1 1e9\n"], walltime=2.0)
    status, out = _simulate(tmp_path, workload)
    assert status == 0
    job = read_jobs(out / "jobs.csv")["1"]
    assert job["final_state"] == "COMPLETED_WALLTIME_REACHED"
    assert float(job["execution_time"]) == pytest.approx(2.0, abs=1e-6)
    # both hosts all cores for 1 s, then a alone for 1 s: 200 + 100 + 10
    assert float(job["consumed_energy"]) == pytest.approx(310.0, abs=1e-4)


def test_the_reader_keeps_batsims_quirks(tmp_path: Path) -> None:
    """The rank files are read as SimGrid's replay reader reads them.

    Comments and blank lines skipped, other ranks' lines ignored, tabs split fields,
    ``std::stod`` reads a number prefix, and a last line without a newline is dropped;
    an empty line of the trace file is a rank with nothing to do.
    """
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.txt").write_text(
        "# comment\n\n  0\tm_usage   0.5 10e3 extra\n1 m_usage 1 5\n0 m_usage 1 7.5abc\n"
        "0 m_usage 1 99")
    (tmp_path / "t" / "list.txt").write_text("a.txt  \n\n")
    trace = check_trace_field({"type": "usage_trace", "trace": "t/list.txt"}, "w0", "p",
                              str(tmp_path / "w.json"))
    assert trace == UsageTrace(f"{tmp_path}/t/list.txt",
                               (f"{tmp_path}/t/a.txt", f"{tmp_path}/t/"))
    ranks = read_usage_trace(trace, "w0!p", "w.json")
    assert [r.actions for r in ranks] == [((0.5, 10e3), (1.0, 7.5)), ()]


@pytest.mark.parametrize(("line", "message"), [
    ("1 m_usage 1.5 10", "invalid usage read: 1.5 not in [0,1]"),
    ("1 m_usage -0.1 10", "invalid usage read: -0.1 not in [0,1]"),
    ("1 m_usage 0.5 -1", "invalid flops read: -1 not positive and finite"),
    ("1 m_usage 0.5 inf", "invalid flops read: inf not positive and finite"),
    ("1 m_usage x 10", "invalid usage 'x': not a number"),
    ("1 m_usage 0.5", "needs USAGE and FLOPS"),
    ("1 compute 10", "unknown replay action 'compute'"),
])
def test_a_bad_trace_line_is_one_error_naming_file_line_and_profile(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, message: str) -> None:
    workload = _write(tmp_path, ["0 m_usage 1 1e9\n", f"# rank 1\n{line}\n"])
    status, _ = _simulate(tmp_path, workload)
    assert status != 0
    err = [e for e in capsys.readouterr().err.splitlines() if e.strip()]
    assert len(err) == 1, err
    assert f"{tmp_path}/ut/r1.txt:2" in err[0] and "w0!p" in err[0], err
    assert str(workload) in err[0] and message in err[0], err


def test_a_missing_trace_file_is_refused_as_the_workload_loads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = _write(tmp_path, ["0 m_usage 1 1e9\n"])
    (tmp_path / "ut" / "traces.txt").unlink()
    status, out = _simulate(tmp_path, workload)
    assert status != 0
    err = [e for e in capsys.readouterr().err.splitlines() if e.strip()]
    assert len(err) == 1 and str(workload) in err[0] and "w0!p" in err[0], err
    assert "leads to a non-existent file" in err[0]


def test_a_missing_rank_file_is_refused_when_the_job_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = _write(tmp_path, ["0 m_usage 1 1e9\n", "1 m_usage 1 1e9\n"])
    (tmp_path / "ut" / "r1.txt").unlink()
    status, out = _simulate(tmp_path, workload)
    assert status != 0
    err = [e for e in capsys.readouterr().err.splitlines() if e.strip()]
    assert len(err) == 1 and "r1.txt" in err[0] and "w0!p" in err[0], err
    assert "cannot read the trace of rank 1" in err[0]


def test_a_registered_usage_trace_profile_is_refused() -> None:
    """Batsim takes usage_trace profiles from workload files only."""
    with pytest.raises(InputError, match="can only come from a workload file"):
        check_trace_field({"type": "usage_trace", "trace": "t.txt"}, "dyn", "p", None)


def _write_sequence(tmp_path: Path, first: int, second: int) -> Path:
    """A one-job workload (2 machines): usage traces of ``first`` then ``second`` ranks.

    The two traces form a ``composed`` sequence; each rank is 1 Gflop on one core.
    """
    workload = tmp_path / "w.json"
    profiles: dict = {"s": {"type": "composed", "seq": ["u1", "u2"]}}
    for name, count in (("u1", first), ("u2", second)):
        folder = tmp_path / name
        folder.mkdir()
        for rank in range(count):
            (folder / f"r{rank}.txt").write_text(f"{rank} m_usage 0.25 1e9\n")
        (folder / "traces.txt").write_text("".join(f"r{r}.txt\n" for r in range(count)))
        profiles[name] = {"type": "usage_trace", "trace": f"{name}/traces.txt"}
    workload.write_text(json.dumps({"nb_res": 2, "jobs": [
        {"id": 1, "subtime": 0, "walltime": 100, "res": 2, "profile": "s"}],
        "profiles": profiles}))
    return workload


def test_a_sequence_of_usage_traces_with_one_rank_count_runs(tmp_path: Path) -> None:
    status, out = _simulate(tmp_path, _write_sequence(tmp_path, 3, 3), energy=False)
    assert status == 0
    job = read_jobs(out / "jobs.csv")["1"]
    # ranks 0 and 2 share host a's 4 cores (one each): each trace takes 1 s
    assert float(job["execution_time"]) == pytest.approx(2.0, abs=1e-6)


def test_a_later_usage_trace_with_another_rank_count_is_an_invalid_job(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A second usage trace with fewer ranks than the first makes the job invalid.

    The first trace gives the job its ranks-to-hosts mapping (2 ranks); Batsim asserts
    that the second trace (1 rank) has as many ranks, as it starts (``execute_task``).
    """
    status, out = _simulate(tmp_path, _write_sequence(tmp_path, 2, 1), energy=False)
    assert status != 0
    err = [e for e in capsys.readouterr().err.splitlines() if e.strip()]
    assert len(err) == 1 and "w0!u2" in err[0], err
    assert "smpi_ranks_to_hosts_mapping has size 2, the trace has 1 ranks" in err[0]
