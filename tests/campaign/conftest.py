"""Fixtures of the campaign tests: a small campaign on the bundled workload."""

from __future__ import annotations

from pathlib import Path

import pytest

from batpolicy.io.inputs import DEFAULT_WORKLOAD, bundled


@pytest.fixture
def small_campaign(tmp_path: Path) -> Path:
    """Eight short runs: fcfs/easy x 2 job counts, redirection x 2 thetas x 2 seeds."""
    text = f'''
[campaign]
name = "small"
output = "res"

[defaults]
workload = "{bundled(DEFAULT_WORKLOAD)}"
nb_res = 128

[[grid]]
policy = ["fcfs", "easy"]
max_jobs = [60, 120]

[[grid]]
policy = "redirection"
params = {{ theta = [1, 10], alpha = 0.1 }}
max_jobs = 120
seed = [1, 2]
'''
    path = tmp_path / "small.toml"
    path.write_text(text)
    return path


@pytest.fixture(autouse=True)
def _run_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Campaigns without an output folder write under the current one: make it tmp_path."""
    monkeypatch.chdir(tmp_path)
