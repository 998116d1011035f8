"""Fixtures of the pybatsim tests: pybatsim 3.2.1 importable here, else skip (fail in CI).

pybatsim is optional (docs/pybatsim.md: ``pip install --no-deps pybatsim==3.2.1``);
``.ci/run`` installs it, so with ``CI=true`` a missing pybatsim fails instead of
skipping, and a green CI run always ran these tests. Nothing is acquired before the skip.
"""

from __future__ import annotations

import importlib.util
import os

import pytest


@pytest.fixture(scope="session")
def pybatsim() -> None:
    """Skip unless pybatsim (its ``batsim`` module and bundled ``schedulers``) is importable."""
    if importlib.util.find_spec("batsim") is None or \
            importlib.util.find_spec("schedulers") is None:
        reason = "pybatsim not installed (pip install --no-deps pybatsim==3.2.1)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI=true: .ci/run installs it, these tests must run")
        pytest.skip(reason)
