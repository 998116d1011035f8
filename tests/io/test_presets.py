"""Every registered preset makes a workload, the same bytes for the same seed."""

from __future__ import annotations

from pathlib import Path

import pytest

from batpolicy.io.batsim_json import write_batsim_workload
from batpolicy.io.presets import PRESETS, build_workload, preset

SMALL = {"coalloc-4.3": {"jobs": 50}, "coalloc-6.1": {"jobs": 50},
         "tabu-4": {"nb_jobs": 40, "nb_machines": 12, "level": 2},
         "uniform": {"nb_jobs": 20}, "nstep": {"nb_jobs": 10}}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_is_deterministic_and_seed_dependent(name: str, tmp_path: Path) -> None:
    params = SMALL.get(name, {"nb_jobs": 10} if "nb_jobs" in PRESETS[name].parameters else {})
    paths = []
    for tag, seed in (("a", 7), ("b", 7), ("c", 8)):
        path = tmp_path / f"{tag}.json"
        write_batsim_workload(build_workload(preset(name, **params), seed), path)
        paths.append(path.read_bytes())
    assert paths[0] == paths[1] and paths[0] != paths[2]


def test_coalloc_jobs_carry_origin_share_and_ppbw() -> None:
    workload = build_workload(preset("coalloc-6.1", jobs=30, bsbw_mbps=400.0), 1)
    raw = workload.jobs[0].raw
    assert raw["origin"].startswith("cluster") and raw["comp_share"] == 0.7
    assert raw["ppbw"] > 0
    assert all(10 <= j.res <= 50 for j in workload.jobs)


def test_tabu_4_jobs_have_deadlines_after_their_release() -> None:
    workload = build_workload(preset("tabu-4", nb_jobs=30, nb_machines=10, level=4), 3)
    assert all(j.raw["deadline"] > j.subtime for j in workload.jobs)
