"""A broken pybatsim scheduler stops the run with one line naming it, the event and the time.

Each scheduler here is a file a user could write (pybatsim's naming: ``fooBar.py``
defines ``FooBar``); the outputs written before the error stay on disk, and a file that
is no pybatsim scheduler is refused before anything is simulated.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from batpolicy.app import cli

from clirun import read_jobs, recorded_inputs, restore_logging  # noqa: F401

pytestmark = pytest.mark.usefixtures("pybatsim")

#: The head every scheduler below shares: FCFS on the lowest free machines.
HEAD = """\
from batsim.batsim import BatsimScheduler
from procset import ProcSet


class {name}(BatsimScheduler):
    def onSimulationBegins(self):
        self.free = ProcSet((0, self.bs.nb_compute_resources - 1))
        self.queue = []
        self.ended = 0

    def onJobSubmission(self, job):
        self.queue.append(job)

    def onNoMoreEvents(self):
        while self.queue and self.queue[0].requested_resources <= len(self.free):
            job = self.queue.pop(0)
            job.allocation = ProcSet(*list(self.free)[:job.requested_resources])
            self.free -= job.allocation
            self.bs.execute_jobs([job])
"""


def _scheduler(tmp_path: Path, module: str, body: str) -> Path:
    path = tmp_path / f"{module}.py"
    name = module[:1].upper() + module[1:]
    path.write_text(HEAD.format(name=name) + textwrap.indent(textwrap.dedent(body), "    "))
    return path


def _run(tmp_path: Path, policy: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Simulate walltime120 with ``policy``: the status and the one error line."""
    status = cli.main(["simulate", *recorded_inputs("walltime120"), "--policy", policy,
                       "-o", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    errors = [line.removeprefix("batpolicy: ERROR: ") for line in err.splitlines()
              if line.startswith("batpolicy: ERROR: ")]
    assert len(errors) <= 1 and "Traceback" not in err, err
    return status, errors[0] if errors else ""


def _outputs_kept(tmp_path: Path) -> dict:
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["complete"] is False and "error" in metrics
    assert (tmp_path / "out" / "schedule.csv").is_file()
    return read_jobs(tmp_path / "out" / "jobs.csv")


def test_a_scheduler_that_raises(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _scheduler(tmp_path, "brokenSched", """
        def onJobCompletion(self, job):
            self.ended += 1
            if self.ended == 3:
                raise ValueError("third completion")
            self.free |= job.allocation
        """)
    status, line = _run(tmp_path, f"pybatsim:{path}", capsys)
    assert status == 1
    assert line.startswith(f"pybatsim scheduler '{path}' failed in onJobCompletion: "
                           "ValueError: third completion (while handling event #0 "
                           "JOB_COMPLETED w0!")
    assert " at t=" in line and f"brokenSched.py:{HEAD.count(chr(10)) + 5}" in line
    assert len(_outputs_kept(tmp_path)) == 3  # the jobs that ended, the third included


def test_a_scheduler_calling_an_unknown_method(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = _scheduler(tmp_path, "oldApi", """
        def onJobCompletion(self, job):
            self.bs.start_job(job)
        """)
    status, line = _run(tmp_path, f"pybatsim:{path}", capsys)
    assert status == 1
    assert "failed in onJobCompletion: it called bs.start_job, which pybatsim's Batsim " \
           "does not have (while handling event #0 JOB_COMPLETED w0!" in line
    _outputs_kept(tmp_path)


def test_a_scheduler_missing_a_handler_pybatsim_calls(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = _scheduler(tmp_path, "noCompletion", "")
    status, line = _run(tmp_path, f"pybatsim:{path}", capsys)
    assert status == 1
    assert "failed in onJobCompletion: it does not implement onJobCompletion, which " \
           "pybatsim calls for this event" in line
    assert "JOB_COMPLETED w0!" in line and "at t=" in line


def test_an_invalid_decision(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _scheduler(tmp_path, "greedySched", """
        def onJobCompletion(self, job):
            self.free |= job.allocation

        def onJobSubmission(self, job):
            job.allocation = ProcSet(0)  # machine 0, busy or not
            self.bs.execute_jobs([job])
        """)
    status, line = _run(tmp_path, f"pybatsim:{path}", capsys)
    assert status == 1
    assert line.startswith(f"policy 'pybatsim:{path}', job 'w0!")
    assert "(in reply to JOB_SUBMITTED w0!" in line and " at t=" in line
    _outputs_kept(tmp_path)


@pytest.mark.parametrize(("source", "said"), [
    ("class NotASched:\n    def __init__(self, options):\n        pass\n",
     "NotASched is not a pybatsim scheduler"),
    ("x = 1\n", "contains no scheduler named NotASched"),
    ("import nonexistent_module_xyz\n", "cannot be loaded: ModuleNotFoundError"),
])
def test_a_file_that_is_no_scheduler_is_refused_before_the_run(
        source: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notASched.py"
    path.write_text(source)
    status, line = _run(tmp_path, f"pybatsim:{path}", capsys)
    assert status == 1 and line.startswith(f"pybatsim:{path}: ") and said in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("policy", "said"), [
    ("pybatsim:noSuchScheduler", "No such scheduler (module file not found)"),
    ("pybatsim:workload.json", "no such file workload.json"),
    ("pybatsim:", "needs a scheduler"),
])
def test_bad_names_are_refused_before_the_run(policy: str, said: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    status, line = _run(tmp_path, policy, capsys)
    assert status == 1 and said in line
    assert not (tmp_path / "out").exists()


def test_bad_options_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(["simulate", "--policy", "pybatsim:easyBackfill", "--param",
                       "options={not json", "-o", str(tmp_path / "out"), "--quiet"])
    assert status == 1
    assert "pybatsim:easyBackfill: options='{not json' is not JSON" in capsys.readouterr().err
