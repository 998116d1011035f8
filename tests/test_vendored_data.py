"""The vendored transcripts (tests/data) are exact copies of the shared ones they stand for.

Without ``../shared`` the fidelity tests run on ``tests/data/transcripts``: that proves
something only while those files are what real Batsim 4.2.1 wrote, so whenever the
shared folder is present every vendored file must equal its original byte for byte (a
gzipped one once decompressed: the 800- and 250-job conversations are vendored gzipped).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from conftest import SHARED_DATA, TRANSCRIPTS, VENDORED_TRANSCRIPTS

VENDORED = sorted(p for p in VENDORED_TRANSCRIPTS.rglob("*") if p.is_file())


def test_the_vendored_core_is_there_and_small() -> None:
    names = {p.name for p in VENDORED}
    for run in ("batsched-easy_bf-walltime120", "batsched-fcfs-walltime120",
                "chaos-generic-events-walltime120", "chaos-samesubmit"):
        assert {f"{run}.jsonl", f"{run}.jobs.csv", f"{run}.schedule.csv"} <= names
    assert sum(p.stat().st_size for p in VENDORED) < 450_000


def test_every_batsched_equivalence_case_runs_on_a_clone() -> None:
    """Each of test_batsched_equivalence's six conversations is vendored (none skips)."""
    names = {p.name for p in VENDORED}
    for prefix in ("batsched-fcfs", "batsched-easy_bf"):
        for workload in ("paper800", "hpc250", "walltime120"):
            run = f"{prefix}-{workload}"
            assert {f"{run}.jsonl", f"{run}.jsonl.gz"} & names, f"{run} is not vendored"


def test_without_shared_data_the_tests_read_the_vendored_copies() -> None:
    shared = SHARED_DATA / "transcripts"
    assert TRANSCRIPTS == (shared if shared.is_dir() else VENDORED_TRANSCRIPTS)


@pytest.mark.parametrize("path", VENDORED, ids=lambda p: str(p.relative_to(VENDORED_TRANSCRIPTS)))
def test_vendored_file_equals_the_shared_original(path: Path) -> None:
    original = SHARED_DATA / "transcripts" / path.relative_to(VENDORED_TRANSCRIPTS)
    if path.suffix == ".gz":
        original = original.with_suffix("")
    if not original.is_file():
        pytest.skip(f"shared original not found at {original}")
    vendored = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    assert vendored == original.read_bytes()
