"""A policy from another installed package: ``--policy mine`` and the testing API.

The test builds a tiny separate package (one module, one entry point in the group
``batpolicy.policies``), installs it with pip into a folder, and runs it as a user would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PACKAGE = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "mine-policy"
        version = "0.1"

        [project.entry-points."batpolicy.policies"]
        mine = "mine_policy:LargestFirst"
        """,
    "mine_policy.py": '''
        """Largest waiting job first, on the lowest free machines (a user's own policy)."""
        from batpolicy.protocol.intervals import MachineSet

        from batpolicy.policies.base import Policy
        from batpolicy.protocol.types import ExecuteJob, RejectJob


        class LargestFirst(Policy):
            """Start the widest waiting jobs that fit, widest first."""

            name = "mine"

            def decide(self, now, state):
                out, free = [], sorted(state.free)
                for job in sorted(state.waiting.values(), key=lambda j: (-j.res, j.seq)):
                    if job.res > state.nb_machines:
                        out.append(RejectJob(job.id))
                    elif job.res <= len(free):
                        alloc, free = free[:job.res], free[job.res:]
                        out.append(ExecuteJob(job.id, MachineSet(alloc)))
                return out
        ''',
}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny package, pip-installed into a folder (no network, no build isolation)."""
    root = tmp_path_factory.mktemp("plugin")
    source = root / "mine-policy"
    source.mkdir()
    for name, text in PACKAGE.items():
        (source / name).write_text(textwrap.dedent(text).lstrip())
    target = root / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-build-isolation", "--no-index", "--target", str(target),
                           str(source)], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        pytest.fail(f"cannot pip-install the test plug-in: {done.stderr[-2000:]}")
    return target


def _env(site: Path) -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{path}" if path else str(site)}


def test_an_installed_plugin_runs_with_policy_mine(installed: Path, tmp_path: Path) -> None:
    listed = subprocess.run([sys.executable, "-m", "batpolicy.app.cli", "policies"],
                            capture_output=True, text=True, env=_env(installed), timeout=60)
    assert "mine\n    Start the widest waiting jobs" in listed.stdout
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "batpolicy.app.cli", "simulate",
                          "--policy", "mine", "--paranoid", "-o", str(out), "--no-progress"],
                         capture_output=True, text=True, env=_env(installed), timeout=120)
    assert run.returncode == 0, run.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["policy"] == "mine" and metrics["complete"] is True
    assert metrics["nb_jobs_finished"] == metrics["nb_jobs"] == 250


def test_the_plugin_is_unit_tested_with_the_testing_api_in_a_few_lines(
        installed: Path) -> None:
    script = textwrap.dedent("""
        from batpolicy.testing import simulate
        s = simulate("mine", [(0, 1, 10), (0, 3, 10), (0, 2, 10), (5, 4, 10)], machines=4)
        assert s.order() == ["0", "1", "3", "2"], s.order()  # widest first at t = 0 and 10
        assert s.machines("1") == [0, 1, 2] and s.machines("0") == [3]
        assert s.start("3") == 10.0 and s.start("2") == 20.0
        print("ok")
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=_env(installed), timeout=60)
    assert done.stdout.strip() == "ok", done.stderr


def test_an_allocation_that_is_not_a_machine_set_is_one_clear_error() -> None:
    from batpolicy.errors import InvalidDecision
    from batpolicy.policies.base import Policy
    from batpolicy.protocol.intervals import MachineSet  # noqa: F401  (what the message names)
    from batpolicy.protocol.types import ExecuteJob
    from batpolicy.testing import simulate

    class ListAlloc(Policy):
        """Starts every job on a Python list of ids (a common first mistake)."""

        name = "list-alloc"

        def decide(self, now, view):  # type: ignore[no-untyped-def]
            return [ExecuteJob(job.id, [0]) for job in view.waiting.values()]

    wanted = r"must be a MachineSet \(batpolicy.protocol.intervals\), not a list"
    with pytest.raises(InvalidDecision, match=wanted) as info:
        simulate(ListAlloc(), [(0, 1, 5)], machines=2)
    assert "list-alloc" in str(info.value)
