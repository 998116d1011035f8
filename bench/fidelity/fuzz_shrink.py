"""Shrink a case that differs to a minimal one that still differs (delta debugging).

Zeller and Hildebrandt's ddmin ("Simplifying and isolating failure-inducing input",
IEEE TSE 28(2), 2002, Fig. 5) over the workload's jobs, then greedy one-step
simplifications, each kept when the case still differs (``still_fails``):

- drop a Batsim flag;
- a ``composed`` profile: repeat 1, then each of its parts alone, then without one part;
- a ``parallel`` profile: each com entry to 0 (ddmin over the non-zero entries), then
  its job on fewer hosts (the first k rows and columns of the matrices);
- other jobs on fewer hosts (``res`` halved, then 1);
- subtimes moved to 0 (one at a time) and walltimes unset;
- the platform: a generated ``<cluster>``'s radical cut to the hosts the jobs need.

Every step costs one run of each side; ``budget`` bounds the runs.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from fuzz_cases import FuzzCase

T = TypeVar("T")


class Budget:
    """How many more tests may run."""

    def __init__(self, tests: int) -> None:
        self.left = tests

    def take(self) -> bool:
        """Use one test; False once none is left."""
        self.left -= 1
        return self.left >= 0


def ddmin(items: Sequence[T], fails: Callable[[list[T]], bool], budget: Budget) -> list[T]:
    """A 1-minimal sub-list of ``items`` on which ``fails`` holds (ddmin, Fig. 5).

    >>> ddmin(list(range(8)), lambda xs: 3 in xs and 5 in xs, Budget(100))
    [3, 5]
    """
    items = list(items)
    n = 2
    while len(items) >= 2:
        chunk = max(len(items) // n, 1)
        subsets = [items[i:i + chunk] for i in range(0, len(items), chunk)]
        reduced = False
        for i, subset in enumerate(subsets):
            complement = [x for j, s in enumerate(subsets) if j != i for x in s]
            if len(subsets) > 2 and budget.take() and fails(subset):
                items, n, reduced = subset, 2, True
                break
            if budget.left > 0 and budget.take() and fails(complement):
                items, n, reduced = complement, max(n - 1, 2), True
                break
            if budget.left <= 0:
                return items
        if not reduced:
            if n >= len(items):
                break
            n = min(len(items), 2 * n)
    return items


def _gc_profiles(workload: dict) -> dict:
    """``workload`` without profiles no job uses."""
    profiles = workload["profiles"]
    keep: set[str] = set()

    def mark(name: str) -> None:
        if name in keep or name not in profiles:
            return
        keep.add(name)
        for part in profiles[name].get("seq", ()):
            mark(part)
    for job in workload["jobs"]:
        mark(job["profile"])
    return {**workload, "profiles": {k: v for k, v in profiles.items() if k in keep}}


def _with_jobs(case: FuzzCase, jobs: list[dict]) -> FuzzCase:
    workload = _gc_profiles({**case.workload, "jobs": jobs})
    used = {p.get("trace", "").rsplit("/", 1)[0] for p in workload["profiles"].values()}
    traces = {k: v for k, v in case.traces.items() if k.rsplit("/", 1)[0] in used}
    return replace(case, workload=workload, traces=traces)


def _variants(case: FuzzCase) -> list[FuzzCase]:
    """One-step simplifications of ``case`` (module docstring), simplest first."""
    out: list[FuzzCase] = []
    for flag in case.flags:
        out.append(replace(case, flags=tuple(f for f in case.flags if f != flag)))
    w = case.workload
    for name, p in sorted(w["profiles"].items()):
        if p["type"] == "composed":
            if p.get("repeat", 1) != 1:
                out.append(_profile(case, name, {**p, "repeat": 1}))
            for part in p["seq"]:
                out.append(_rename(case, name, part))
            if len(p["seq"]) > 1:
                for i in range(len(p["seq"])):
                    out.append(_profile(case, name, {**p, "seq": p["seq"][:i] + p["seq"][i + 1:]}))
        elif p["type"] == "parallel" and any(p["com"]):
            out.append(_profile(case, name, {**p, "com": [0.0] * len(p["com"])}))
    for i, job in enumerate(w["jobs"]):
        p = w["profiles"].get(job["profile"], {})
        if job["res"] > 1:
            for res in sorted({1, job["res"] // 2}):
                out.append(_res(case, i, res))
        if job["subtime"] != 0:
            out.append(_job(case, i, subtime=0))
        if job.get("walltime", -1) != -1:
            out.append(_job(case, i, walltime=-1))
        del p
    shrunk = _cut_cluster(case)
    if shrunk is not None:
        out.append(shrunk)
    return out


def _profile(case: FuzzCase, name: str, profile: dict) -> FuzzCase:
    w = copy.deepcopy(case.workload)
    w["profiles"][name] = profile
    return _with_jobs(replace(case, workload=w), w["jobs"])


def _rename(case: FuzzCase, name: str, part: str) -> FuzzCase:
    """Jobs of profile ``name`` use its part ``part`` instead."""
    w = copy.deepcopy(case.workload)
    for job in w["jobs"]:
        if job["profile"] == name:
            job["profile"] = part
    return _with_jobs(replace(case, workload=w), w["jobs"])


def _job(case: FuzzCase, i: int, **fields: Any) -> FuzzCase:
    w = copy.deepcopy(case.workload)
    w["jobs"][i].update(fields)
    w["jobs"].sort(key=lambda j: j["subtime"])
    return _with_jobs(replace(case, workload=w), w["jobs"])


def _res(case: FuzzCase, i: int, res: int) -> FuzzCase:
    """Job ``i`` on ``res`` hosts; a ``parallel`` profile cut to its first ``res`` executors."""
    w = copy.deepcopy(case.workload)
    job = w["jobs"][i]
    p = w["profiles"][job["profile"]]
    if p["type"] == "parallel":
        n = len(p["cpu"])
        new = f"{job['profile']}_r{res}"
        w["profiles"][new] = {"type": "parallel", "cpu": p["cpu"][:res],
                              "com": [p["com"][a * n + b] for a in range(res)
                                      for b in range(res)]}
        job["profile"] = new
    job["res"] = res
    return _with_jobs(replace(case, workload=w), w["jobs"])


def _zero_com(case: FuzzCase, name: str, keep: set[int]) -> FuzzCase:
    w = copy.deepcopy(case.workload)
    p = w["profiles"][name]
    p["com"] = [v if i in keep else 0.0 for i, v in enumerate(p["com"])]
    return _with_jobs(replace(case, workload=w), w["jobs"])


_RADICAL = re.compile(r'(<cluster id="c" prefix="host" suffix="" radical="0-)(\d+)(")')


def _cut_cluster(case: FuzzCase) -> FuzzCase | None:
    """A generated cluster cut to the most hosts a job asks (None: not one, or no cut)."""
    m = _RADICAL.search(case.platform)
    if not m:
        return None
    need = max((j["res"] for j in case.workload["jobs"]), default=1)
    if need >= int(m.group(2)) + 1:
        return None
    platform = _RADICAL.sub(rf"\g<1>{need - 1}\3", case.platform, count=1)
    return replace(case, platform=platform, workload={**case.workload, "nb_res": need},
                   platform_name=f"{case.platform_name}-cut{need}")


def shrink(case: FuzzCase, still_fails: Callable[[FuzzCase], bool], budget: int = 60
           ) -> FuzzCase:
    """A smaller case on which ``still_fails`` holds (module docstring)."""
    b = Budget(budget)
    jobs = ddmin(case.workload["jobs"], lambda js: still_fails(_with_jobs(case, js)), b)
    if len(jobs) < len(case.workload["jobs"]):
        case = _with_jobs(case, jobs)
    progress = True
    while progress and b.left > 0:
        progress = False
        for candidate in _variants(case):
            if candidate.key() == case.key() or not b.take():
                continue
            if still_fails(candidate):
                case, progress = candidate, True
                break
    for name, p in sorted(case.workload["profiles"].items()):
        if p["type"] == "parallel" and b.left > 0:
            nonzero = [i for i, v in enumerate(p["com"]) if v]
            if len(nonzero) > 1:
                kept = ddmin(nonzero, lambda ks, n=name, c=case: still_fails(
                    _zero_com(c, n, set(ks))), b)
                if len(kept) < len(nonzero):
                    case = _zero_com(case, name, set(kept))
    return case
