"""Issue 31, item 12: a run stopped by a signal writes the outputs it writes otherwise.

However ``simulate`` or ``fake-batsim`` stops (its end, an error, ``--timeout``, SIGINT,
SIGTERM, SIGHUP), ``jobs.csv``, ``schedule.csv`` and ``metrics.json`` are on disk,
``metrics.json`` saying ``"complete": false`` and what stopped it (``stopped_by``); a
second signal while they are written waits for them. (``fake-batsim`` stopped by a
signal or its timeout: tests/reliability/test_faults.py.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from batpolicy.scheduler.stop_signals import Stopped, outputs_first, stop_on_signals

#: ``simulate`` with FCFS that signals its own process once the run reaches t = 3000 s,
#: and again (the other signal) from ``stats()``, which runs while the outputs are written.
DRIVER = textwrap.dedent('''
    import os, signal, sys
    from batpolicy.policies import registry
    from batpolicy.policies.fcfs import Fcfs
    from batpolicy.app.cli import main

    first, second = (getattr(signal, name) for name in sys.argv[1:3])
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal


    class Stopper(Fcfs):
        name = "stopper"
        sent = False

        def decide(self, now, state):
            if now >= 3000 and not self.sent:
                self.sent = True
                os.kill(os.getpid(), first)
            return super().decide(now, state)

        def stats(self):
            os.kill(os.getpid(), second)
            return {"stats_asked": True}


    registry.make_policy = lambda name, params=None: Stopper()
    sys.exit(main(["simulate", "--policy", "stopper", "-o", sys.argv[3], "-q"]))
''')


@pytest.mark.parametrize("first,second", [("SIGTERM", "SIGINT"), ("SIGINT", "SIGTERM")])
def test_simulate_stopped_by_a_signal_writes_every_output_even_when_signalled_again(
        first: str, second: str, tmp_path: Path) -> None:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, str(driver), first, second, str(out)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 130 and "Traceback" not in run.stderr, run.stderr
    assert f"ERROR: interrupted ({first})" in run.stderr
    assert f"{second} received while writing the outputs" in run.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["complete"] is False and metrics["stopped_by"] == first
    assert metrics["policy_stats"] == {"stats_asked": True}
    assert 0 < metrics["nb_job_records"] < 250 and metrics["nb_jobs_open"] > 0
    rows = (out / "jobs.csv").read_text().splitlines()
    assert len(rows) == 1 + metrics["nb_job_records"]
    assert (out / "schedule.csv").read_text().startswith("batsim_version")


def test_outputs_first_holds_a_signal_until_the_block_ends() -> None:
    with stop_on_signals():
        with pytest.raises(Stopped) as stopped:
            with outputs_first():
                os.kill(os.getpid(), signal.SIGTERM)
                written = True  # reached: the signal waited
        assert written and stopped.value.signal_name == "SIGTERM"
        with outputs_first(stopping=True):  # the run stops anyway: only logged
            os.kill(os.getpid(), signal.SIGTERM)
