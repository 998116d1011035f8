"""The deadline-driven Grid setting of Klusáček, Matyska & Rudová 2007, §4 (``tabu-4``).

"1500 dynamically arriving jobs and 150 machines with different CPU count/speed. Both
parallel and sequential jobs ... 7 different arrival-time distributions representing 7
different loads of the system each with 20 different data sets which were generated
synthetically using exponential distribution" (§4). The paper's generator (from its
refs. [5, 19]) is not public, so the distributions below are our choices, written in
:data:`TABU4` and kept small and explicit:

- machines: CPU counts drawn from ``cpus`` and speeds (× ``reference_speed``) from
  ``speeds``, uniformly; every host of a machine carries ``group`` (the machine's name)
  and ``speed`` properties, the way the platform view reads machines;
- jobs: a share ``sequential`` needs one CPU, the others a power of two from 2 to
  ``max_parallel``; work at the reference speed is log-uniform in ``runtime``; the
  profile is ``parallel_homogeneous`` (``cpu`` flop per host, no communication), so
  Batsim and both simulator job models scale it by the machine's speed;
- arrivals: exponential inter-arrival times whose mean makes the offered load (work
  · CPUs over the speed-weighted capacity) equal to ``loads[level - 1]``; level 1 is
  the busiest, level 7 the quietest. 1,500 jobs arrive within a few hours, so "load" is
  the offered load of that burst, not a steady state (levels 1–3 exceed the capacity);
- deadlines: ``subtime + work · U(slack)``, the work taken at the reference speed, which
  is the slowest: U(0.6, 1.5) is 1.2–3 times the run time on an average (2×) machine, so
  a job must not wait long, nor go to a slow machine; with looser deadlines (U(1.5, 5))
  MT-EDF had no late job at any load and Tabu search nothing to do;
- walltimes: ``walltime_factor ·`` the run time on the slowest speed (never killed).

Registered as preset ``tabu-4`` (:mod:`~batpolicy.io.presets`); the machines
of a seed as a Batsim platform file are :func:`grid_machines` (``batpolicy platform machines
--preset tabu-4 --seed S``, and a campaign run of the preset without a platform writes
them in its folder). Groups are named ``m000``, ``m001``, ... there, hosts numbered as in
:func:`grid_platform`.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass

from batpolicy.errors import ConfigError
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.model import Machine, Platform

__all__ = ["TABU4", "GridSpec", "grid_machines", "grid_platform", "grid_workload"]


@dataclass(frozen=True, slots=True)
class GridSpec:
    """Parameters of the §4 setting (see the module docstring)."""

    nb_machines: int = 150
    nb_jobs: int = 1500
    cpus: tuple[int, ...] = (1, 2, 4, 8)
    speeds: tuple[float, ...] = (1.0, 1.5, 2.0, 2.5, 3.0)
    reference_speed: float = 1e9
    sequential: float = 0.5
    max_parallel: int = 8
    runtime: tuple[float, float] = (60.0, 7200.0)
    slack: tuple[float, float] = (0.6, 1.5)
    loads: tuple[float, ...] = (3.0, 2.4, 1.9, 1.5, 1.2, 0.9, 0.6)
    walltime_factor: float = 1.1


#: The paper's setting: 150 machines, 1,500 jobs, 7 loads (use with 20 seeds).
TABU4 = GridSpec()


def grid_platform(spec: GridSpec, seed: int) -> Platform:
    """Machines of random CPU count and speed; hosts in machine order.

    Runtime complexity: O(hosts).

    >>> p = grid_platform(GridSpec(nb_machines=3), 1)
    >>> sorted({m.properties["group"] for m in p.machines})
    ['m0', 'm1', 'm2']
    """
    rng = random.Random(f"platform-{seed}")
    hosts: list[Machine] = []
    for g in range(spec.nb_machines):
        cpus = rng.choice(spec.cpus)
        speed = rng.choice(spec.speeds) * spec.reference_speed
        for c in range(cpus):
            hosts.append(Machine(len(hosts), f"m{g}c{c}", speed=speed,
                                 properties={"group": f"m{g}", "speed": repr(speed)}))
    return Platform(hosts)


def grid_machines(spec: GridSpec, seed: int) -> list[tuple[str | None, int, str, bool]]:
    """The machines of :func:`grid_platform` as ``(name, cpus, speed, gpu)`` rows, in order.

    The rows of :func:`batpolicy.platforms.generators.machines` (a platform file whose
    hosts Batsim numbers as :func:`grid_platform` does). Runtime complexity: O(hosts).

    >>> grid_machines(GridSpec(nb_machines=2), 1)
    [(None, 2, '1.5Gf', False), (None, 2, '2Gf', False)]
    """
    machines: dict[str, list[Machine]] = {}
    for host in grid_platform(spec, seed).machines:
        machines.setdefault(host.properties["group"], []).append(host)
    return [(None, len(hosts), f"{hosts[0].speed / 1e9:.12g}Gf", False)
            for hosts in machines.values()]


def _capacity(platform: Platform, reference_speed: float) -> float:
    return sum(m.speed for m in platform.machines) / reference_speed


def grid_workload(spec: GridSpec, seed: int, level: int,
                  platform: Platform | None = None) -> Workload:
    """1,500 jobs (by default) at load ``level`` (1 = busiest .. len(spec.loads)).

    The same seed gives the same jobs at every level, only arrivals are stretched.
    Runtime complexity: O(jobs).

    >>> w = grid_workload(GridSpec(nb_machines=4, nb_jobs=5), 1, 3)
    >>> len(w.jobs), sorted(w.jobs[0].raw)
    (5, ['deadline', 'id', 'profile', 'res', 'subtime', 'walltime'])
    """
    if not 1 <= level <= len(spec.loads):
        raise ConfigError(f"tabu-4 load level must be in 1..{len(spec.loads)}, got {level}")
    platform = platform if platform is not None else grid_platform(spec, seed)
    largest = max(Counter(m.properties.get("group") for m in platform.machines).values())
    rng = random.Random(f"jobs-{seed}")
    sizes, works, gaps, slacks = [], [], [], []
    low, high = spec.runtime
    for _ in range(spec.nb_jobs):
        if rng.random() < spec.sequential:
            res = 1
        else:
            res = 2 ** rng.randint(1, max(1, int(math.log2(spec.max_parallel))))
        sizes.append(min(res, largest))
        works.append(round(math.exp(rng.uniform(math.log(low), math.log(high))), 1))
        gaps.append(rng.expovariate(1.0))
        slacks.append(rng.uniform(*spec.slack))
    mean_demand = sum(r * w for r, w in zip(sizes, works, strict=True)) / spec.nb_jobs
    mean_gap = mean_demand / (spec.loads[level - 1] * _capacity(platform, spec.reference_speed))
    slowest = min(spec.speeds)
    jobs, profiles, at = [], {}, 0.0
    for i in range(spec.nb_jobs):
        at = round(at + gaps[i] * mean_gap, 3)
        name = f"p{i}"
        profiles[name] = {"type": "parallel_homogeneous",
                          "cpu": works[i] * spec.reference_speed, "com": 0.0}
        walltime = math.ceil(spec.walltime_factor * works[i] / slowest)
        raw = {"id": f"w0!{i}", "subtime": at, "res": sizes[i], "walltime": walltime,
               "profile": name, "deadline": round(at + works[i] * slacks[i], 3)}
        jobs.append(JobSpec(raw["id"], at, sizes[i], name, float(walltime), raw=raw))
    workload = Workload("w0", jobs, profiles, nb_res=platform.nb_machines,
                        source=f"tabu-4 seed {seed} level {level}")
    workload.sort()
    return workload
