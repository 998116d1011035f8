"""A campaign checks every run before the first one, and reruns what changed (issue 31, 11).

Before: unknown policies were refused up front, but a bad parameter value, a missing
workload file or an unknown job model failed only when its run came (after hours of
others); and a rerun reused finished runs even when the policy's code had changed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from batpolicy.app.campaign import checks
from batpolicy.app.campaign.executors import LocalPool
from batpolicy.app.campaign.runner import run_campaign
from batpolicy.app.campaign.spec import load_campaign
from batpolicy.app.campaign.task import CODE_FILE, run_dir
from batpolicy.app.cli import main

from clirun import restore_logging  # noqa: F401  (autouse: the CLI's handlers removed)

GOOD = '[[run]]\npolicy = "fcfs"\nmax_jobs = 10\n[[run]]\npolicy = "easy"\nmax_jobs = 10\n'


@pytest.mark.parametrize("bad, words", [
    ('policy = "easy"\nparams = { order = "tallest" }', "run #3 (.*easy).*order"),
    ('policy = "easy"\nworkload = "missing.swf"', "run #3 .*workload file not found: .*missing"),
    ('policy = "easy"\nplatform = "nowhere.xml"', "run #3 .*platform file not found"),
    ('policy = "easy"\njob_model = "warp"', "run #3 .*unknown job model 'warp'"),
    ('policy = "nstep"\nparams = { depth = -1 }', "run #3 .*nstep.*depth"),
    ('policy = "easy"\npreset = "uniform"\npreset_params = { nb_jobs = -4 }', "run #3 .*"),
])
def test_a_bad_run_is_named_before_any_run_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str, words: str) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text(GOOD + f"[[run]]\n{bad}\n")
    out = tmp_path / "out"
    assert main(["campaign", str(toml), "-o", str(out), "-j", "1", "--no-progress"]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "nothing was run" in errors[0]
    assert re.search(words, errors[0]), errors[0]
    assert not (out / "runs").exists()  # the two good runs did not run either


def test_every_bad_run_is_counted_in_the_one_error(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text('[[grid]]\npolicy = "easy"\nworkload = ["a.swf", "b.swf", "c.swf"]\n')
    with pytest.raises(Exception, match=r"run #1 .*a\.swf \(and 2 more run\(s\)"):
        checks.validate(load_campaign(toml, tmp_path / "out"))


def test_force_reruns_finished_runs(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text(GOOD)
    campaign = load_campaign(toml, tmp_path / "out")
    assert run_campaign(campaign, LocalPool(1), progress=False).ran == 2
    again = run_campaign(campaign, LocalPool(1), progress=False)
    assert (again.skipped, again.ran) == (2, 0)
    forced = run_campaign(campaign, LocalPool(1), progress=False, force=True)
    assert (forced.skipped, forced.ran) == (0, 2)
    assert main(["campaign", str(toml), "-o", str(tmp_path / "out"), "--force", "-j", "1",
                 "--no-progress"]) == 0


def test_a_run_is_redone_when_its_policys_code_changed(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text(GOOD)
    campaign = load_campaign(toml, tmp_path / "out")
    run_campaign(campaign, LocalPool(1), progress=False)
    fcfs = run_dir(campaign.output, campaign.runs[0])
    recorded = json.loads((fcfs / CODE_FILE).read_text())
    assert recorded == {"policy": "fcfs", "policy_code": checks.policy_code_hash("fcfs")}
    # as if fcfs's code had changed since: its run is redone, easy's is not
    (fcfs / CODE_FILE).write_text(json.dumps({**recorded, "policy_code": "0" * 12}))
    again = run_campaign(campaign, LocalPool(1), progress=False)
    assert (again.skipped, again.ran) == (1, 1)
    assert json.loads((fcfs / CODE_FILE).read_text()) == recorded


def test_the_code_hash_follows_the_policys_source_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Editing a policy's module (or a module it uses) changes its hash."""
    import importlib
    import sys

    pkg = tmp_path / "myplug"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "rules.py").write_text("def order(job):\n    return job.res\n")
    (pkg / "policy.py").write_text(
        "from batpolicy.policies.base import Policy\nfrom myplug.rules import order\n\n"
        "class Mine(Policy):\n    name = 'mine'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cls = importlib.import_module("myplug.policy").Mine
    files = {p.name for p in checks._code_files(cls)}
    assert {"policy.py", "rules.py", "contract.py"} <= files  # Policy lives in the contract
    before = checks.code_hash(cls)
    (pkg / "rules.py").write_text("def order(job):\n    return -job.res\n")
    assert checks.code_hash(cls) != before
    for name in ("myplug.policy", "myplug.rules", "myplug"):
        sys.modules.pop(name, None)
