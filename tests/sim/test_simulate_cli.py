"""``batpolicy simulate`` as a user runs it: the command's outputs, its errors, its recording.

Every command runs in-process through ``batpolicy.app.cli.main`` and writes to
``tmp_path``. The reference for the schedules is what real Batsim 4.2.1 wrote for
batsched 1.4 (``easy_bf`` and ``fcfs``) on the same inputs: our ``easy`` and ``fcfs``
reproduce batsched decision for decision, so the jobs.csv files must be equal.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType

import pytest

from batpolicy.app import cli
from batpolicy.policies import registry
from batpolicy.policies.fcfs import Fcfs
from batpolicy.policies.registry import make_policy
from batpolicy.protocol.codec import reply_to_obj, request_from_obj
from batpolicy.protocol.transcript import read_transcript
from batpolicy.scheduler.dispatch import Dispatcher

from clirun import (  # noqa: F401  (restore_logging is an autouse fixture)
    INPUTS,
    RECORDED_WORKLOADS,
    read_jobs,
    recorded_inputs,
    restore_logging,
)
from conftest import TRANSCRIPTS

#: What "the same schedule" means for every job (the issue's start, finish, state, allocation).
SCHEDULE_FIELDS = ("starting_time", "finish_time", "final_state", "allocated_resources")


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


@pytest.mark.parametrize("workload", sorted(RECORDED_WORKLOADS))
@pytest.mark.parametrize("policy,batsched", [("easy", "easy_bf"), ("fcfs", "fcfs")])
def test_simulate_gives_the_jobs_csv_batsim_wrote_for_batsched(
        policy: str, batsched: str, workload: str, tmp_path: Path) -> None:
    reference = TRANSCRIPTS / f"batsched-{batsched}-{workload}.jobs.csv"
    inputs = recorded_inputs(workload)
    out = tmp_path / "out"
    status = cli.main(["simulate", "--policy", policy, *inputs, "-o", str(out), "--quiet"])
    assert status == 0

    ours, batsim = read_jobs(out / "jobs.csv"), read_jobs(reference)
    assert sorted(ours) == sorted(batsim), "not the same jobs"
    for job_id, expected in batsim.items():
        got = ours[job_id]
        assert {f: got[f] for f in SCHEDULE_FIELDS} == {f: expected[f] for f in SCHEDULE_FIELDS}, \
            f"job {job_id} of {reference.name}"
    assert ours == batsim  # every other column too, with Batsim's 6 decimals
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["complete"] is True and "error" not in metrics
    assert metrics["nb_jobs"] == metrics["nb_jobs_finished"] == len(batsim)
    assert (out / "schedule.csv").read_text().count("\n") == 2  # header and one row


def _write_broken_swf(path: Path) -> None:
    path.write_text("; MaxProcs: 16\n"
                    "1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n"
                    "2 10 5 abc 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n")


def _write_bad_json_syntax(path: Path) -> None:
    path.write_text('{"nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "p"},\n'
                    ' {"id": 2 "subtime": 0}],\n "profiles": {"p": {"type": "delay", '
                    '"delay": 1}}}\n')


def _write_bad_json_field(path: Path) -> None:
    workload = json.loads((INPUTS / "walltime_mix_120.json").read_text())
    workload["jobs"][3]["res"] = "four"
    path.write_text(json.dumps(workload, indent=1))


@pytest.mark.parametrize("writer,name,needles", [
    # SWF: file:line and the field
    (_write_broken_swf, "broken.swf", ["broken.swf:3", "'run_time'", "abc"]),
    # JSON syntax: file:line
    (_write_bad_json_syntax, "syntax.json", ["syntax.json:2", "invalid JSON"]),
    # JSON field: a parsed JSON document has no lines, so the job and the field are named
    (_write_bad_json_field, "field.json", ["field.json", "job '#3 (id 3)'", "'res'", "four"]),
])
def test_a_broken_workload_gives_one_error_line_naming_file_line_and_field(
        writer, name: str, needles: list[str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    if not INPUTS.is_dir():
        pytest.skip(f"shared inputs not found at {INPUTS}")
    path = tmp_path / name
    writer(path)
    status = cli.main(["simulate", "--policy", "easy", "-w", str(path), "--nb-res", "32",
                       "-o", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert status == 1
    lines = _error_lines(err)
    assert len(lines) == 1, err
    assert lines[0].startswith("batpolicy: ERROR: ")
    for needle in needles:
        assert needle in lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize("option,needle", [
    (["--max-jobs", "-5"], "--max-jobs must be >= 0"),  # JSON: used to drop the last 5 jobs
    (["--bsld-tau", "0"], "--bsld-tau must be > 0"),
    (["--nb-res", "0"], "must be positive"),
])
def test_bad_options_give_one_error_line(option: list[str], needle: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    inputs = recorded_inputs("walltime120")[:2]
    if "--nb-res" not in option:
        inputs += ["--nb-res", "32"]
    status = cli.main(["simulate", *inputs, *option, "-o", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert status == 1
    lines = _error_lines(err)
    assert len(lines) == 1 and lines[0].startswith("batpolicy: ERROR: "), err
    assert needle in lines[0] and "Traceback" not in err


def test_lenient_skips_and_counts_the_broken_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.swf"
    _write_broken_swf(path)
    out = tmp_path / "out"
    assert cli.main(["simulate", "-w", str(path), "--lenient", "-o", str(out), "--quiet"]) == 0
    assert list(read_jobs(out / "jobs.csv")) == ["1"]


class _FailingFcfs(Fcfs):
    """FCFS that raises once the simulated time reaches 1,000 s."""

    name = "fails-at-1000"

    def decide(self, now, view):  # type: ignore[no-untyped-def]
        """FCFS's decisions, until t = 1,000 s."""
        if now >= 1000.0:
            raise RuntimeError(f"deliberate failure at t={now}")
        return super().decide(now, view)


def test_a_policy_that_raises_leaves_the_outputs_of_what_was_done(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    inputs = recorded_inputs("paper800")
    policies = MappingProxyType({**registry.POLICIES, _FailingFcfs.name: _FailingFcfs})
    # make_policy and --policy's choices (available_policies) look it up here
    monkeypatch.setattr(registry, "POLICIES", policies)
    out = tmp_path / "out"
    status = cli.main(["simulate", "--policy", _FailingFcfs.name, *inputs, "-o", str(out),
                       "--no-progress", "--schedule-trace"])
    err = capsys.readouterr().err
    assert status != 0
    errors = [line for line in _error_lines(err) if "ERROR" in line]
    assert len(errors) == 1 and "deliberate failure" in errors[0] and _FailingFcfs.name in errors[0]
    assert "Traceback" not in err

    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["complete"] is False
    assert "deliberate failure" in metrics["error"]
    failed_at = metrics["simulated_time_s"]
    assert failed_at >= 1000.0

    # the rows on disk are exactly those of a whole fcfs run that ended before the failure
    partial = read_jobs(out / "jobs.csv")
    assert 0 < len(partial) < 800
    assert metrics["nb_jobs_finished"] == len(partial)
    assert metrics["nb_jobs_open"] > 0  # submitted, still waiting or running at the failure
    whole = read_jobs(TRANSCRIPTS / "batsched-fcfs-paper800.jobs.csv")
    ended_before = {job_id: row for job_id, row in whole.items()
                    if float(row["finish_time"]) <= failed_at + 1e-6}  # CSV: 6 decimals
    assert partial == ended_before
    header, row = (out / "schedule.csv").read_text().splitlines()
    schedule = dict(zip(header.split(","), row.split(","), strict=True))
    assert int(schedule["nb_jobs_finished"]) == len(partial)
    assert int(schedule["nb_jobs"]) == len(partial) + metrics["nb_jobs_open"]
    # the Pajé trace keeps its events, without the end an aborted Batsim does not write
    trace = (out / "schedule.trace").read_text()
    assert trace.count("\n5 j") >= len(partial) and "# End of events" not in trace


def test_simulate_record_writes_a_transcript_that_reads_back_and_replays(
        tmp_path: Path) -> None:
    inputs = recorded_inputs("walltime120")
    record = tmp_path / "run.msgpack"
    out = tmp_path / "out"
    assert cli.main(["simulate", "--policy", "easy", *inputs, "-o", str(out),
                     "--record", str(record), "--quiet"]) == 0
    exchanges = list(read_transcript(record))
    metrics = json.loads((out / "metrics.json").read_text())
    assert len(exchanges) == metrics["nb_messages"]
    first, last = exchanges[0], exchanges[-1]
    assert [e["type"] for e in first[0]["events"]] == ["SIMULATION_BEGINS"]
    assert last[0]["events"][-1]["type"] == "SIMULATION_ENDS"
    assert last[1] == {"now": last[0]["now"], "events": []}

    # the Batsim side, replayed to a fresh easy, gets the recorded replies back
    replay = Dispatcher(make_policy("easy"), paranoid=True)
    starts = 0
    for number, (request, reply) in enumerate(exchanges, 1):
        assert reply_to_obj(replay.handle(request_from_obj(request))) == reply, \
            f"exchange {number}"
        starts += sum(e["type"] == "EXECUTE_JOB" for e in reply["events"])
    assert replay.state.ended
    assert starts == 120


def test_simulate_writes_batsims_machine_states_a_row_per_job_start_and_end(
        tmp_path: Path) -> None:
    """machine_states.csv as Batsim writes it (export.cpp MachineStateTracer)."""
    out = tmp_path / "out"
    assert cli.main(["simulate", "--policy", "easy", *recorded_inputs("walltime120"),
                     "-o", str(out), "--quiet"]) == 0
    header, *rows = (out / "machine_states.csv").read_text().splitlines()
    assert header == "time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing"
    jobs = read_jobs(out / "jobs.csv")
    started = [j for j in jobs.values() if j["starting_time"]]
    assert len(rows) == 2 * len(started)  # one row as each job starts, one as it ends
    cells = [row.split(",") for row in rows]
    times = [float(c[0]) for c in cells]
    assert times == sorted(times)
    # jobs.csv rounds to 6 decimals; the first start is EXECUTE_JOB's byte after 0
    assert times[0] == pytest.approx(min(float(j["starting_time"]) for j in started), abs=5e-7)
    assert times[-1] == pytest.approx(max(float(j["finish_time"]) for j in started), rel=1e-5)
    nb_machines = int(cells[0][4]) + int(cells[0][5])
    assert all(c[1:4] == ["0", "0", "0"] and int(c[4]) + int(c[5]) == nb_machines
               for c in cells)
    assert cells[-1][4:] == [str(nb_machines), "0"]  # all idle at the end
