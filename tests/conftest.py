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
