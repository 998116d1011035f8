"""Shared test fixtures: where the shared data lives."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
TRANSCRIPTS = SHARED_DATA / "transcripts"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder (a sibling of the repository)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder not found at {SHARED_DATA}")
    return SHARED_DATA


BATSIM_PREFIX = Path(__import__("os").environ.get("BATSIM_PREFIX", "/opt/batsim-4.2.1"))


@pytest.fixture(scope="session")
def batsim_prefix() -> Path:
    """Where real Batsim 4.2.1 and batsched are installed (``../shared/batsim/build.sh``).

    Tests using it skip when they are absent: the suite passes without them.
    """
    if not (BATSIM_PREFIX / "bin" / "batsim").is_file():
        pytest.skip(f"real Batsim not built at {BATSIM_PREFIX} (bash ../shared/batsim/build.sh)")
    return BATSIM_PREFIX
