"""Why no episode gives ``simulate --policy easy``'s jobs.csv (issue 45), on a 5-job reproducer.

The environment starts each job an action picks on the lowest free machine ids, so the
jobs started at one instant hold a prefix of the free ids. ``--policy easy`` (batsched's
easy_bf) puts a backfilled job that ends after the head's shadow time on the lowest
*unreserved* ids and leaves lower, reserved, machines idle. On 4 machines:

- at 0, ``j1`` (1 machine, ends at 5) on 0, ``j2_long`` (2 machines, ends at 100) on
  1-2, ``j3`` (1 machine, ends at 5) on 3; at 5 machines 0 and 3 are free again;
- at 6, ``j4_head`` (3 machines) does not fit: shadow time 101 (``j2_long``'s walltime
  end), reserved machines 0-2;
- at 7, ``j5_late`` (1 machine, walltime 1001 s, ends after the shadow time) is
  backfilled on the only unreserved machine, 3, while 0 stays free.

Every action sequence that could give that jobs.csv is searched (one that starts a job
at a time EASY does not start it cannot): each gives EASY's start times, none EASY's
machines. The EASY baseline gives those start times too; on KTH-SP2 the same placement
is the first difference, after which reservations and times drift
(``bench/fidelity/gym_easy.py``).
"""

from __future__ import annotations

import csv
import functools
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

gymnasium = pytest.importorskip("gymnasium")

from gym_workloads import delay_workload  # noqa: E402  (tests/ helper)

import batpolicy.gym  # noqa: E402,F401 - registers the environment
from batpolicy.app.cli import main  # noqa: E402
from batpolicy.gym import baselines  # noqa: E402
from batpolicy.io.inputs import DEFAULT_WORKLOAD, bundled  # noqa: E402

#: Jobs observed: every job of the reproducer.
WINDOW = 5

#: (id, submission, machines, runtime); each walltime is its runtime + 1 s
JOBS = [("j1", 0, 1, 5), ("j2_long", 0, 2, 100), ("j3", 0, 1, 5), ("j4_head", 6, 3, 10),
        ("j5_late", 7, 1, 1000)]


def _workload(path: Path) -> Path:
    profiles = {f"p{job}": {"type": "delay", "delay": run} for job, _, _, run in JOBS}
    jobs = [{"id": job, "subtime": sub, "res": res, "profile": f"p{job}", "walltime": run + 1}
            for job, sub, res, run in JOBS]
    path.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": profiles}))
    return path


def _starts(path: Path) -> dict[str, tuple[str, str]]:
    with path.open(newline="") as f:
        return {r["job_id"]: (r["starting_time"], r["allocated_resources"])
                for r in csv.DictReader(f)}


def _times(starts: dict[str, tuple[str, str]]) -> dict[str, str]:
    return {job: time for job, (time, _) in starts.items()}


def _play(workload: Path, actions: list[int], out: Path) -> tuple[list[tuple[int, str]], float]:
    """Replay ``actions``; the next decision's allowed (action, job id) ("" for wait), time.

    At the episode's end: no action, time -1.
    """
    env = gymnasium.make("batpolicy/Scheduling-v0", workload=workload, window=WINDOW,
                         output_dir=out)
    obs, info = env.reset(seed=0)
    try:
        for action in actions:
            obs, _, terminated, _, info = env.step(action)
            if terminated:
                return [], -1.0
        ids = info["job_ids"] + [""] * (WINDOW + 1 - len(info["job_ids"]))
        return [(int(i), ids[i]) for i in info["action_mask"].nonzero()[0]], info["time"]
    finally:
        env.close()


def test_easy_backfills_on_machines_no_action_sequence_can_choose(tmp_path: Path) -> None:
    workload = _workload(tmp_path / "w.json")
    assert main(["simulate", "--policy", "easy", "-w", str(workload), "-o",
                 str(tmp_path / "easy"), "-q", "--no-progress"]) == 0
    easy = _starts(tmp_path / "easy" / "jobs.csv")
    assert easy["j5_late"] == ("7.000000", "3")  # machine 0 is free and stays idle
    assert easy["j4_head"] == ("100.000000", "0-2")

    # Every action sequence that may still give EASY's jobs.csv, depth first: starting
    # a job at a time EASY does not start it cannot, so only those branches are cut.
    out = tmp_path / "episode"
    episodes, stack = 0, [[]]
    while stack:
        actions = stack.pop()
        allowed, now = _play(workload, actions, out)
        if allowed:
            stack.extend(actions + [a] for a, job in allowed
                         if not job or float(easy[job.split("!")[-1]][0]) == now)
            continue
        episodes += 1
        got = _starts(out / "jobs.csv")
        assert _times(got) == _times(easy), actions  # every job at EASY's time ...
        assert got != easy, actions  # ... but never all on EASY's machines
        if all(got[job] == easy[job] for job in ("j1", "j2_long", "j3")):
            assert got["j5_late"] == ("7.000000", "0"), actions  # the lowest free id
    assert episodes > 1, episodes

    # the baseline makes EASY's decisions, on the machines the environment gives
    env = gymnasium.make("batpolicy/Scheduling-v0", workload=workload, window=5,
                         output_dir=tmp_path / "baseline")
    obs, info = env.reset(seed=0)
    while True:
        obs, _, terminated, _, info = env.step(baselines.easy(obs, info))
        if terminated:
            break
    env.close()
    baseline = _starts(tmp_path / "baseline" / "jobs.csv")
    assert _times(baseline) == _times(easy)
    assert baseline["j5_late"] == ("7.000000", "0")
    assert baseline["j4_head"] == ("100.000000", "1-3")


def _inputs(inputs: str, tmp_path: Path) -> tuple[Path, Path | None, int | None]:
    """(workload, platform, max_jobs) of one named input."""
    workload, platform, max_jobs = bundled(DEFAULT_WORKLOAD), None, None
    if inputs == "kth":
        workload, max_jobs = bundled("KTH-SP2-1996-2-4weeks.swf.gz"), 800
    elif inputs == "generated":
        workload = delay_workload(tmp_path / "gen.json", n=300, seed=11)
    elif inputs == "latency":  # 512 machines: nothing waits, no backfilling, identical
        platform = Path(__file__).parents[1] / "data" / "batsim421" / "cluster512.xml"
    elif inputs == "reproducer":
        workload = _workload(tmp_path / "w.json")
    return workload, platform, max_jobs


@functools.cache
def _bench() -> ModuleType:
    """bench/fidelity/gym_easy.py, which compares the two jobs.csv."""
    spec = importlib.util.spec_from_file_location(
        "bench_gym_easy", Path(__file__).parents[2] / "bench" / "fidelity" / "gym_easy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("inputs", ["bundled", "kth", "generated", "latency", "reproducer"])
def test_easy_baseline_is_easy_on_lowest_ids_and_first_differs_from_easy_by_a_placement(
        tmp_path: Path, inputs: str) -> None:
    """The baseline's jobs.csv is ``--policy easy --param backfill_on=lowest``'s, byte for byte.

    Against plain easy: its jobs, up to the first placement no action can choose.
    """
    bench = _bench()
    workload, platform, max_jobs = _inputs(inputs, tmp_path)
    comparison = bench.compare(workload, platform, max_jobs, 1000, tmp_path)
    assert comparison.longest_queue <= 1000
    assert comparison.identical == (inputs == "latency")
    assert comparison.placement_only, bench.report(comparison)
    assert comparison.lowest_identical, bench.report(comparison)
    if inputs == "reproducer":  # j5_late on the lowest free id, the head's reservation moved
        lowest = _starts(tmp_path / "lowest" / "jobs.csv")
        assert lowest["j5_late"] == ("7.000000", "0")
        assert lowest["j4_head"] == ("100.000000", "1-3")  # at its shadow time all the same
