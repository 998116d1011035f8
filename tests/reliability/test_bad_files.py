"""Issue 6, item 4: bad input files give one clear error naming file, line/job and field.

Already tested in tests/io/ (not repeated): Batsim JSON workloads (broken JSON with its
line, every missing/mistyped/negative job field, NaN, duplicated ids, lenient counts),
SWF traces (broken line, NaN/inf fields, duplicated job numbers, jobs wider than the
platform kept and counted, lenient counts) and events files (broken line, missing or
negative fields, NaN). Platform XML is tested in tests/platforms/test_xml.py.

Here: what only shows once files meet each other or the command line — events naming
machines outside the platform, machines made unavailable twice, a job larger than the
platform — and that ``batpolicy simulate`` turns each bad file into one error line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batpolicy.app import cli
from batpolicy.errors import InputError
from batpolicy.io.batsim_json import read_batsim_workload
from batpolicy.io.events import read_events
from batpolicy.platforms.model import Platform
from batpolicy.policies.registry import make_policy
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.simulator import Simulator

from clirun import restore_logging  # noqa: F401  (autouse fixture)

PROFILES = {"p": {"type": "delay", "delay": 5}}


def _workload(tmp_path: Path, jobs: list[dict], nb_res: int = 4) -> Path:
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"nb_res": nb_res, "jobs": jobs, "profiles": PROFILES}))
    return path


def _job(i: int, res: int = 1, subtime: float = 0) -> dict:
    return {"id": i, "subtime": subtime, "res": res, "profile": "p", "walltime": 10}


def _events(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "events.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_events_naming_machines_outside_the_platform_name_file_and_line(tmp_path: Path) -> None:
    events = _events(tmp_path, '{"timestamp": 0, "type": "custom"}',
                     '{"timestamp": 1, "type": "machine_unavailable", "resources": "2-7"}')
    sim = Simulator([read_batsim_workload(_workload(tmp_path, [_job(1)]))],
                    Platform.homogeneous(4), events=read_events(events))
    with pytest.raises(InputError) as err:
        sim.run(Dispatcher(make_policy("fcfs")).handle)
    assert (err.value.path, err.value.line, err.value.field) == (str(events), 2, "resources")
    assert "outside the platform" in str(err.value)


def test_a_machine_made_unavailable_twice_names_file_and_line(tmp_path: Path) -> None:
    events = _events(tmp_path,
                     '{"timestamp": 1, "type": "machine_unavailable", "resources": "0-1"}',
                     '{"timestamp": 2, "type": "machine_unavailable", "resources": "1"}')
    sim = Simulator([read_batsim_workload(_workload(tmp_path, [_job(1)]))],
                    Platform.homogeneous(4), events=read_events(events))
    with pytest.raises(InputError, match="already unavailable") as err:
        sim.run(Dispatcher(make_policy("fcfs")).handle)
    assert (err.value.path, err.value.line) == (str(events), 2)


def _simulate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    status = cli.main(["simulate", *args, "--no-progress", "-q"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, [line for line in err.splitlines() if "ERROR" in line]


@pytest.mark.parametrize(("case", "needle"), [
    ("workload-broken-json", "invalid JSON"),
    ("workload-missing-res", "'res'"),
    ("workload-negative-subtime", "subtime"),
    ("workload-duplicate-id", "duplicated job id"),
    ("swf-nan-field", "submit_time"),
    ("events-broken-line", "invalid JSON"),
    ("events-outside-platform", "outside the platform"),
    ("platform-missing-speed", "speed"),
    ("platform-negative-speed", "speed"),
])
def test_simulate_turns_each_bad_file_into_one_error_line(
        case: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = _workload(tmp_path, [_job(1), _job(2, subtime=3)])
    args = ["-w", str(workload), "--nb-res", "4"]
    bad: Path
    if case.startswith("workload"):
        text = workload.read_text()
        bad = workload
        if case == "workload-broken-json":
            text = text.replace('"res": 1', '"res": 1,,', 1)
        elif case == "workload-missing-res":
            text = text.replace('"res": 1, ', "", 1)
        elif case == "workload-negative-subtime":
            text = text.replace('"subtime": 3', '"subtime": -3', 1)
        else:
            text = text.replace('"id": 2', '"id": 1', 1)
        workload.write_text(text)
    elif case == "swf-nan-field":
        bad = tmp_path / "t.swf"
        bad.write_text("1 0 0 100 4 -1 -1 4 200 -1 1 7 2 -1 -1 -1 -1 -1\n"
                       "2 nan 0 100 4 -1 -1 4 200 -1 1 7 2 -1 -1 -1 -1 -1\n")
        args = ["-w", str(bad), "--nb-res", "4"]
    elif case.startswith("events"):
        bad = _events(tmp_path, '{"timestamp": 1, "type": "machine_unavailable", '
                      + ('"resources": "0",' if case == "events-broken-line" else
                         '"resources": "9"}'))
        args += ["--events", str(bad)]
    else:
        bad = tmp_path / "p.xml"
        speed = "" if case == "platform-missing-speed" else 'speed="-1Gf"'
        bad.write_text(f'<?xml version="1.0"?>\n<platform version="4.1">\n'
                       f'<zone id="z" routing="Full">\n<host id="h0" {speed}/>\n'
                       '</zone>\n</platform>\n')
        args = ["-w", str(workload), "-p", str(bad)]
    status, errors = _simulate(capsys, *args, "-o", str(tmp_path / "out"))
    assert status != 0 and len(errors) == 1, errors
    assert str(bad) in errors[0] and needle in errors[0], errors[0]


def test_lenient_simulate_counts_what_it_skipped(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    workload = _workload(tmp_path, [_job(1), _job(1), {"id": 3, "subtime": 0, "profile": "p"}])
    status = cli.main(["simulate", "-w", str(workload), "--nb-res", "4", "--lenient",
                       "--no-progress", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 0, err
    assert "skipped {'duplicate_id': 1, 'invalid_res': 1}" in err, err
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["nb_jobs"] == 1


def test_a_job_larger_than_the_platform_stops_simulate_unless_lenient(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One error naming file, job and field; ``--lenient`` drops it and counts it."""
    workload = _workload(tmp_path, [_job(1), _job(2, res=9)])
    out = tmp_path / "out"
    status = cli.main(["simulate", "-w", str(workload), "--nb-res", "4", "--no-progress",
                       "-q", "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 1
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert str(workload) in err[0] and "job 'w0!2'" in err[0] and "field 'res'" in err[0]
    assert "9 machines" in err[0] and "4" in err[0]

    status = cli.main(["simulate", "-w", str(workload), "--nb-res", "4", "--no-progress",
                       "--lenient", "-o", str(out)])
    err = capsys.readouterr().err
    assert status == 0, err
    assert "dropped 1 job(s) larger than the platform" in err, err
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["inputs_skipped"]["w0"] == {"dropped_larger_than_platform": 1}
    rows = (out / "jobs.csv").read_text().splitlines()[1:]
    assert [row.split(",")[0] for row in rows] == ["1"]


def test_the_library_simulator_leaves_a_too_large_job_to_the_policy_as_batsim_does(
        tmp_path: Path) -> None:
    """Batsim accepts such a job and leaves it to the scheduler: every policy rejects it."""
    workload = read_batsim_workload(_workload(tmp_path, [_job(1), _job(2, res=9)]))
    sim = Simulator([workload], Platform.homogeneous(4))
    result = sim.run(Dispatcher(make_policy("easy")).handle)
    assert result.job("w0!2").rejected and result.job("w0!1").success
