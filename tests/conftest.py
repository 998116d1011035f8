"""Shared test fixtures: where the shared data lives, and its vendored core.

The shared data folder is a sibling of the repository, not part of it. A clone
without it still proves the core fidelity claims: a handful of recorded Batsim 4.2.1
conversations and their inputs are vendored under ``tests/data/transcripts`` (see
``tests/data/README.md``), and :data:`TRANSCRIPTS` falls back to them. Tests that need
anything else skip, and they must skip *before* acquiring a resource (socket, process,
ZeroMQ context): a skip raised inside a ``try`` that owns a context leaks it and blocks
the interpreter's exit.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

#: No per-example time limit in any property test: the suite runs on loaded 2-core
#: machines, and speed is measured by bench/, never asserted (a test's own
#: ``@settings`` still sets its example count).
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
#: The recorded conversations vendored with the tests (a subset of the shared ones).
VENDORED_TRANSCRIPTS = REPO / "tests" / "data" / "transcripts"
#: The shared transcripts when present, else the vendored subset.
TRANSCRIPTS = SHARED_DATA / "transcripts" if (SHARED_DATA / "transcripts").is_dir() \
    else VENDORED_TRANSCRIPTS


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder (a sibling of the repository)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder not found at {SHARED_DATA}")
    return SHARED_DATA


BATSIM_PREFIX = Path(__import__("os").environ.get("BATSIM_PREFIX", "/opt/batsim-4.2.1"))


@pytest.fixture(scope="session")
def batsim_prefix() -> Path:
    """Where real Batsim 4.2.1 and batsched are installed (built outside the repository).

    Tests using it skip when they are absent: the suite passes without them.
    """
    if not (BATSIM_PREFIX / "bin" / "batsim").is_file():
        pytest.skip(f"real Batsim not built at {BATSIM_PREFIX} (bash ../shared/batsim/build.sh)")
    return BATSIM_PREFIX
