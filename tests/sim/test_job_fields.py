"""Job fields beyond Batsim's core: read, typed, kept in jobs.csv, used by the metrics."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from batpolicy.app import cli
from batpolicy.errors import InputError, ProtocolError
from batpolicy.io import read_batsim_workload
from batpolicy.io.outputs import JOBS_COLUMNS
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.outcomes import JobOutcome, compute_metrics, merge_copies
from batpolicy.scheduler.state import ClusterState

from clirun import restore_logging  # noqa: F401  (autouse fixture)

TWO_CLUSTERS = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="main" routing="Full">
    <cluster id="c0" prefix="a" suffix="" radical="0-1" speed="1Gf" bw="10GBps" lat="0"/>
    <cluster id="c1" prefix="b" suffix="" radical="0-1" speed="1Gf" bw="10GBps" lat="0"/>
    <host id="master_host" speed="1Gf"/>
  </zone>
</platform>
"""


def write_workload(path: Path, jobs: list[dict[str, Any]]) -> Path:
    profiles = {f"d{d}": {"type": "delay", "delay": d} for d in (5, 10, 20)}
    path.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": profiles}))
    return path


def job(i: int, subtime: float, res: int, delay: int, **extra: Any) -> dict[str, Any]:
    return {"id": i, "subtime": subtime, "res": res, "profile": f"d{delay}", **extra}


# ------------------------------------------------------------------------------ reading
def test_reader_keeps_the_fields_and_names_a_malformed_one(tmp_path: Path) -> None:
    path = write_workload(tmp_path / "w.json", [
        job(1, 0, 1, 5, deadline=12, job_type="mpi", origin="c0", comp_share=0.25,
            ppbw=1e8, preferred="c1", runtime_other=7.5, job_model="placement")])
    (spec,) = read_batsim_workload(path).jobs
    assert spec.raw["deadline"] == 12 and spec.raw["job_model"] == "placement"
    write_workload(path, [job(1, 0, 1, 5, comp_share=2), job(2, 0, 1, 5, deadline="soon")])
    with pytest.raises(InputError) as info:
        read_batsim_workload(path)
    assert info.value.field == "comp_share" and "[0, 1]" in str(info.value)
    assert "#0 (id 1)" in str(info.value)
    lenient = read_batsim_workload(path, lenient=True)
    assert lenient.jobs == [] and lenient.skipped == {"invalid_field": 2}


def test_cluster_state_types_the_fields_of_job_submitted() -> None:
    state = ClusterState()
    desc = {"id": "w0!1", "subtime": 0, "res": 2, "profile": "p", "deadline": 40,
            "job_type": "gpu", "origin": "c0", "comp_share": 0.5, "ppbw": 2e8,
            "preferred": "rack1", "runtime_other": 30}
    new = state.apply(t.JobSubmitted(0.0, "w0!1", desc))
    assert (new.deadline, new.job_type, new.origin, new.comp_share, new.ppbw, new.preferred,
            new.runtime_other, new.job_model) == (40.0, "gpu", "c0", 0.5, 2e8, "rack1", 30.0,
                                                  None)
    plain = state.apply(t.JobSubmitted(0.0, "w0!2", {"id": "w0!2", "subtime": 0, "res": 1,
                                                      "profile": "p"}))
    assert plain.deadline is None and plain.job_type is None
    with pytest.raises(ProtocolError, match="field 'job.ppbw'"):
        state.apply(t.JobSubmitted(0.0, "w0!3", {**desc, "id": "w0!3", "ppbw": -1}))


# ------------------------------------------------------------------------------ outputs
def run_simulate(tmp_path: Path, jobs: list[dict[str, Any]], *args: str,
                 policy: str = "fcfs") -> Path:
    tmp_path.mkdir(exist_ok=True)
    platform = tmp_path / "two_clusters.xml"
    platform.write_text(TWO_CLUSTERS)
    workload = write_workload(tmp_path / "w.json", jobs)
    out = tmp_path / "out"
    assert cli.main(["simulate", "--policy", policy, "-w", str(workload), "-p", str(platform),
                     "-o", str(out), "--quiet", *args]) == 0
    return out


def test_jobs_csv_gets_extra_columns_only_for_fields_the_workload_uses(tmp_path: Path) -> None:
    out = run_simulate(tmp_path, [job(1, 0, 2, 10, deadline=8, job_type="mpi"),
                                  job(2, 0, 2, 10, job_type="x,y"), job(3, 1, 4, 5)])
    lines = (out / "jobs.csv").read_text().splitlines()
    assert lines[0] == ",".join(JOBS_COLUMNS) + ",deadline,job_type"
    rows = {row["job_id"]: row for row in csv.DictReader(lines)}
    assert (rows["1"]["deadline"], rows["1"]["job_type"]) == ("8.000000", "mpi")
    assert (rows["2"]["deadline"], rows["2"]["job_type"]) == ("", "x,y")
    assert (rows["3"]["deadline"], rows["3"]["job_type"]) == ("", "")
    assert lines[1].startswith("1,w0,d10,0.000000,2,-1.000000,1,COMPLETED_SUCCESSFULLY,")
    assert lines[1].endswith(',"",8.000000,mpi')
    plain = run_simulate(tmp_path / "plain", [job(1, 0, 2, 10), job(2, 0, 2, 10)])
    assert (plain / "jobs.csv").read_text().splitlines()[0] == ",".join(JOBS_COLUMNS)


def test_metrics_count_late_jobs_tardiness_and_utilisation_per_group(tmp_path: Path) -> None:
    # FCFS on c0 = {0, 1}, c1 = {2, 3}: 1 runs 0-10 on 0-1, 2 runs 0-10 on 2-3,
    # 3 runs 10-15 on 0-3, 4 runs 15-35 on 0
    out = run_simulate(tmp_path, [job(1, 0, 2, 10, deadline=12), job(2, 0, 2, 10, deadline=9),
                                  job(3, 0, 4, 5, deadline=11), job(4, 0, 1, 20)])
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["nb_jobs_with_deadline"] == 3
    assert metrics["nb_late_jobs"] == 2  # 2 (by 1 s) and 3 (by 4 s)
    assert metrics["total_tardiness"] == 5.0 and metrics["max_tardiness"] == 4.0
    assert metrics["mean_tardiness"] == pytest.approx(5.0 / 3)
    # span 35 s: c0 holds 2x10 + 2x5 + 20 = 50 machine-s, c1 2x10 + 2x5 = 30, of 2x35
    assert metrics["utilization_per_group"] == {"c0": 50 / 70, "c1": 30 / 70}


def test_a_copy_keeps_its_originals_deadline() -> None:
    original = ("w0!1", "", JobOutcome(0.0, 0.0, 5.0, 1, False, killed=True, deadline=20.0))
    copy = ("r!1", "parent=w0!1", JobOutcome(5.0, 5.0, 30.0, 1, True))
    (merged,) = merge_copies([original, copy])
    assert merged.deadline == 20.0
    metrics = compute_metrics([merged], nb_machines=1)
    assert (metrics["nb_late_jobs"], metrics["total_tardiness"]) == (1, 10.0)


def test_utilisation_per_group_is_left_out_without_groups() -> None:
    metrics = compute_metrics([JobOutcome(0.0, 0.0, 1.0, 1, True, alloc=MachineSet.of(0))],
                              nb_machines=1)
    assert "utilization_per_group" not in metrics


# ------------------------------------------------------------------------------ expected ends
def test_expected_ends_model_lets_easy_plan_with_the_real_ends(tmp_path: Path) -> None:
    # 1 runs 0-10 on one machine (walltime 100); 2 needs both machines; 3 (walltime 30)
    # would backfill before 2's reservation at 100 (walltime) but not before 10 (model)
    jobs = [job(1, 0, 1, 10, walltime=100), job(2, 1, 4, 5, walltime=100),
            job(3, 2, 2, 20, walltime=30)]
    starts = {}
    for mode in ("walltime", "model"):
        result = run_simulate(tmp_path / mode, jobs, "--expected-ends", mode, "--paranoid",
                              policy="easy")
        rows = csv.DictReader((result / "jobs.csv").read_text().splitlines())
        starts[mode] = {row["job_id"]: float(row["starting_time"]) for row in rows}
    assert starts["walltime"] == {"1": 0.0, "2": 22.0, "3": 2.0}
    assert starts["model"] == {"1": 0.0, "2": 10.0, "3": 15.0}


def test_job_model_option_per_run_and_per_workload(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # FCFS puts the job on machine 0 (cluster c0); it prefers c1: 20 s there, not 5
    jobs = [job(1, 0, 1, 5, preferred="c1", runtime_other=20)]
    for name, args, runtime in (("default", (), "5.000000"),
                                ("run", ("--job-model", "placement"), "20.000000"),
                                ("workload", ("--job-model", "w0=placement"), "20.000000"),
                                ("other", ("--job-model", "w1=placement"), "5.000000")):
        out = run_simulate(tmp_path / name, jobs, *args)
        (row,) = csv.DictReader((out / "jobs.csv").read_text().splitlines())
        assert row["execution_time"] == runtime, name
        assert (row["preferred"], row["runtime_other"]) == ("c1", "20.000000")
    workload = write_workload(tmp_path / "w.json", jobs)
    capsys.readouterr()
    assert cli.main(["simulate", "-w", str(workload), "--nb-res", "2", "--quiet",
                     "-o", str(tmp_path / "bad"), "--job-model", "w0=quantum"]) != 0
    err = capsys.readouterr().err
    assert "unknown job model 'quantum'" in err and "Traceback" not in err
