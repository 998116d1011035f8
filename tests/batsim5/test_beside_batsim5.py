"""Live: ``batpolicy serve --batsim 5`` beside real Batsim 5, against Batsim 5's own EDCs.

Needs Batsim 5 and its example EDC libraries (``docker/batsim5/build.sh``, under
``$BATSIM5_PREFIX``, default ``/opt/batsim5-snapshot``) and the shared inputs; skipped
when absent, before any process starts. Every run must end cleanly (both exit 0), and:

- ``fcfs`` gives the jobs.csv of Batsim 5's FCFS EDC, byte for byte;
- ``easy-edc5`` (``batpolicy/policies/easy_edc5.py``) gives the jobs.csv of Batsim 5's
  C++ EASY EDC, byte for byte;
- ``easy`` (batsched's easy_bf) gives, beside Batsim 5, the starts, ends, machines and
  final states batsched's easy_bf got beside Batsim 4.2.1 (the shared transcripts): the
  policy is unchanged from one protocol to the other. (It differs from Batsim 5's EASY EDC,
  which counts left-over hosts instead of reserving machines: ``docs/batsim5.md``.)
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from batsim5 import live

pytestmark = pytest.mark.batsim5

CASES = list(live.CASES)


@pytest.fixture(scope="module", autouse=True)
def _needs_batsim5() -> None:
    if not live.available():
        pytest.skip(f"Batsim 5 with its EDC libraries not built under {live.PREFIX}")
    if not live.INPUTS.is_dir():
        pytest.skip(f"shared inputs not found at {live.INPUTS} (set BATPOLICY_SHARED_DATA)")


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(("edc", "policy"), list(live.SAME_AS_EDC.items()))
def test_same_jobs_as_batsim5_s_own_edc(case: str, policy: str, edc: str,
                                        tmp_path: Path) -> None:
    reference = live.run_library(case, edc, tmp_path / "edc")
    ours = live.run_beside(case, policy, tmp_path / "serve")
    assert reference.returncode == 0, reference.stderr[-2000:]
    assert ours.returncode == 0, ours.stderr[-3000:]
    assert ours.jobs_csv.count(b"\n") > 10 and ours.jobs_csv == reference.jobs_csv


def _jobs(data: str) -> dict[str, tuple[str, ...]]:
    return {r["job_id"]: (r["starting_time"], r["finish_time"], r["allocated_resources"],
                          r["final_state"]) for r in csv.DictReader(io.StringIO(data))}


@pytest.mark.parametrize("case", ["walltime120", "hpc250", "paper800"])
def test_easy_beside_batsim5_is_easy_beside_batsim4(case: str, tmp_path: Path) -> None:
    batsim4 = live.SHARED / "transcripts" / f"batsched-easy_bf-{case}.jobs.csv"
    if not batsim4.is_file():
        pytest.skip(f"{batsim4} not found")
    ours = live.run_beside(case, "easy", tmp_path / "serve")
    assert ours.returncode == 0, ours.stderr[-3000:]
    expected = _jobs(batsim4.read_text())
    assert len(expected) > 100 and _jobs(ours.jobs_csv.decode()) == expected
