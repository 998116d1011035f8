"""Seeded synthetic workloads: Poisson arrivals per group, random service times and sizes.

The workload model of Jones, Pang, Stanzione & Ligon (bandwidth-aware co-allocation,
§4, "Beosim ... synthetic workload distributions"): jobs arrive to each group
(cluster) ``C_i`` as a Poisson process of rate ``λ_i`` (exponential inter-arrival times
of mean ``1/λ_i``), their service time is exponential of mean ``1/μ_i`` (or here
uniform), their size uniform in ``[n_1, n_2]`` nodes, and their computation share a
constant ``K_i``. Deadlines follow Klusáček, Matyska & Rudová (deadline-driven grid
scheduling, §2): job ``j`` released at ``r_j`` must end by ``d_j = r_j + slack × p_j``
with the slack drawn uniformly per job.

A :class:`SynthSpec` lists :class:`JobStreamSpec` s; :func:`generate` turns it into a Batsim
delay workload (one ``delay`` profile per distinct run time). Extra job fields
(``deadline``, ``job_type``, ``origin``, ``comp_share``, ``ppbw``, ``preferred``,
``runtime_other``; INTERFACES.md §C) are written only when the spec asks for them.

Determinism: the same spec and seed give the same jobs, hence the same bytes from
:func:`~batpolicy.io.batsim_json.write_batsim_workload`, on any platform and
Python >= 3.11. Each group and each quantity (arrivals, service times, sizes, slacks,
types) draws from its own ``random.Random`` seeded with the string
``"<seed>/<group>/<quantity>"`` (string seeds go through SHA-512, never through the
salted ``hash``), with only ``random()`` and ``randrange()``, whose streams Python keeps
stable; the distributions are computed here (``-mean * log(1 - u)``), not taken from
library functions that may change. So turning deadlines on leaves arrivals, run times
and sizes as they were. Times are rounded to ``resolution`` seconds (default 1 s) so
that Batsim's double arithmetic and ours agree exactly.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from batpolicy.errors import ConfigError
from batpolicy.io.swf import delay_profile_name
from batpolicy.io.workload import JobSpec, Workload

__all__ = ["JobStreamSpec", "JobType", "SynthSpec", "generate"]

SERVICE_LAWS = ("exponential", "uniform")


@dataclass(frozen=True, slots=True)
class JobType:
    """A kind of job (``job_type`` field), drawn with probability proportional to ``weight``.

    ``preferred`` names the group the job runs best on and ``runtime_other_factor`` its run
    time elsewhere as a multiple of its run time there (``runtime_other`` field), as in
    Wu & Chen's N-step search (GPU jobs run slower off the GPU rack).
    """

    name: str
    weight: float = 1.0
    preferred: str | None = None
    runtime_other_factor: float | None = None


@dataclass(frozen=True, slots=True)
class JobStreamSpec:
    """The stream of jobs arriving to one group (``origin``; None: to the whole platform).

    Inter-arrival times are exponential of mean ``mean_interarrival`` s (Poisson arrivals).
    Service (run) times are exponential of mean ``mean_service`` or uniform in
    ``service_range``; sizes uniform integers in ``res_range`` (both ends included).
    ``walltime_factor``: walltime = factor × run time (None: no walltime). ``slack_range``:
    deadline = release + slack × run time, slack uniform in the range (None: no deadline).
    ``comp_share`` (K) and ``ppbw`` (bytes/s per processor) are constants of the group.
    """

    nb_jobs: int = 100
    origin: str | None = None
    mean_interarrival: float = 150.0
    service: str = "exponential"
    mean_service: float = 225.0
    service_range: tuple[float, float] = (60.0, 3600.0)
    res_range: tuple[int, int] = (1, 1)
    walltime_factor: float | None = 2.0
    slack_range: tuple[float, float] | None = None
    comp_share: float | None = None
    ppbw: float | None = None
    job_types: tuple[JobType, ...] = ()


@dataclass(frozen=True, slots=True)
class SynthSpec:
    """A synthetic workload: its groups, platform size and time resolution."""

    groups: tuple[JobStreamSpec, ...] = field(default_factory=lambda: (JobStreamSpec(),))
    nb_res: int | None = None
    name: str = "w0"
    resolution: float = 1.0

    def check(self) -> None:
        """Raise :class:`ConfigError` naming the first parameter that cannot work."""
        if not self.name or "!" in self.name:
            raise ConfigError(f"workload name {self.name!r} must be non-empty and hold no '!'")
        if not self.groups:
            raise ConfigError("a synthetic workload needs at least one group")
        if not (math.isfinite(self.resolution) and self.resolution >= 0):
            raise ConfigError(f"resolution must be >= 0 s, got {self.resolution}")
        if self.nb_res is not None and self.nb_res < 1:
            raise ConfigError(f"nb_res must be >= 1, got {self.nb_res}")
        for i, g in enumerate(self.groups):
            _check_group(g, f"group {g.origin or i}", self.nb_res)


def _positive(value: float, what: str) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ConfigError(f"{what} must be a finite number > 0, got {value!r}")


def _check_group(g: JobStreamSpec, where: str, nb_res: int | None) -> None:
    if g.nb_jobs < 0:
        raise ConfigError(f"{where}: nb_jobs must be >= 0, got {g.nb_jobs}")
    _positive(g.mean_interarrival, f"{where}: mean_interarrival")
    if g.service not in SERVICE_LAWS:
        raise ConfigError(f"{where}: service must be one of {', '.join(SERVICE_LAWS)}, "
                          f"got {g.service!r}")
    if g.service == "exponential":
        _positive(g.mean_service, f"{where}: mean_service")
    lo, hi = g.service_range
    if g.service == "uniform" and not (0 < lo <= hi and math.isfinite(hi)):
        raise ConfigError(f"{where}: service_range must satisfy 0 < min <= max, got {lo}, {hi}")
    n1, n2 = g.res_range
    if not (isinstance(n1, int) and isinstance(n2, int) and 1 <= n1 <= n2):
        raise ConfigError(f"{where}: res_range must be integers with 1 <= min <= max, "
                          f"got {n1}, {n2}")
    if nb_res is not None and n2 > nb_res:
        raise ConfigError(f"{where}: jobs of up to {n2} machines do not fit nb_res {nb_res}")
    if g.walltime_factor is not None:
        _positive(g.walltime_factor, f"{where}: walltime_factor")
    if g.slack_range is not None and not 0 <= g.slack_range[0] <= g.slack_range[1]:
        raise ConfigError(f"{where}: slack_range must satisfy 0 <= min <= max, "
                          f"got {g.slack_range}")
    if g.comp_share is not None and not 0 <= g.comp_share <= 1:
        raise ConfigError(f"{where}: comp_share (K) must be in [0, 1], got {g.comp_share}")
    if g.ppbw is not None:
        _positive(g.ppbw, f"{where}: ppbw")
    for t in g.job_types:
        _positive(t.weight, f"{where}: weight of job type {t.name!r}")
        if t.runtime_other_factor is not None:
            _positive(t.runtime_other_factor, f"{where}: runtime_other_factor of {t.name!r}")


def _exponential(rng: random.Random, mean: float) -> float:
    """An exponential draw of mean ``mean`` by inversion (stable across Python versions)."""
    return -mean * math.log(1.0 - rng.random())


def _rounded(value: float, resolution: float) -> float:
    """``value`` to the nearest multiple of ``resolution`` (unchanged when 0).

    >>> _rounded(12.4, 1.0), _rounded(12.6, 0.5), _rounded(3.3, 0.0)
    (12.0, 12.5, 3.3)
    """
    return float(round(value / resolution) * resolution) if resolution else value


def _weighted(rng: random.Random, types: tuple[JobType, ...]) -> JobType:
    """One job type, with probability proportional to its weight."""
    total = sum(t.weight for t in types)
    x = rng.random() * total
    for t in types:
        x -= t.weight
        if x < 0:
            return t
    return types[-1]


def _group_jobs(g: JobStreamSpec, index: int, seed: int,
                resolution: float) -> list[tuple[float, int, int, float, int, dict[str, Any]]]:
    """``(subtime, group, rank, run time, size, extra fields)`` of the jobs of one group."""
    def stream(quantity: str) -> random.Random:
        """The random stream of one quantity of this group (see the module docstring)."""
        return random.Random(f"{seed}/{index}/{quantity}")

    arrivals, services, sizes = stream("arrival"), stream("service"), stream("size")
    slacks, kinds = stream("slack"), stream("type")
    floor = resolution or 0.0
    now = 0.0
    out = []
    for rank in range(g.nb_jobs):
        now += _exponential(arrivals, g.mean_interarrival)
        if g.service == "exponential":
            run = _exponential(services, g.mean_service)
        else:
            run = g.service_range[0] + (g.service_range[1] - g.service_range[0]) * services.random()
        run = max(_rounded(run, resolution), floor) or run  # never a zero-length job
        res = g.res_range[0] + sizes.randrange(g.res_range[1] - g.res_range[0] + 1)
        subtime = _rounded(now, resolution)
        fields: dict[str, Any] = {}
        if g.slack_range is not None:
            slack = g.slack_range[0] + (g.slack_range[1] - g.slack_range[0]) * slacks.random()
            fields["deadline"] = _rounded(subtime + slack * run, resolution)
        if g.job_types:
            kind = _weighted(kinds, g.job_types)
            fields["job_type"] = kind.name
            if kind.preferred is not None:
                fields["preferred"] = kind.preferred
            if kind.runtime_other_factor is not None:
                fields["runtime_other"] = _rounded(run * kind.runtime_other_factor, resolution)
        if g.origin is not None:
            fields["origin"] = g.origin
        if g.comp_share is not None:
            fields["comp_share"] = g.comp_share
        if g.ppbw is not None:
            fields["ppbw"] = g.ppbw
        out.append((subtime, index, rank, run, res, fields))
    return out


def generate(spec: SynthSpec, seed: int) -> Workload:
    """The workload ``spec`` describes for ``seed``: same inputs, same jobs, same bytes.

    Jobs of every group are merged by submit time (ties: group order, then arrival order)
    and named ``1, 2, ...`` in that order. Runtime complexity: O(n log n).

    >>> w = generate(SynthSpec((JobStreamSpec(nb_jobs=3, res_range=(1, 4)),), nb_res=4), seed=7)
    >>> [j.id for j in w.jobs], w.nb_res, w == generate(SynthSpec((JobStreamSpec(nb_jobs=3,
    ...     res_range=(1, 4)),), nb_res=4), seed=7)
    (['w0!1', 'w0!2', 'w0!3'], 4, True)
    """
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError(f"the seed must be an integer, got {seed!r}")
    spec.check()
    drawn = [job for i, g in enumerate(spec.groups)
             for job in _group_jobs(g, i, seed, spec.resolution)]
    drawn.sort(key=lambda item: (item[0], item[1], item[2]))
    jobs: list[JobSpec] = []
    profiles: dict[str, dict[str, Any]] = {}
    for number, (subtime, group, _, run, size, fields) in enumerate(drawn, 1):
        g = spec.groups[group]
        full = f"{spec.name}!{number}"
        pname = delay_profile_name(run)
        profiles.setdefault(pname, {"type": "delay", "delay": int(run) if run.is_integer()
                                    else run})
        walltime = None if g.walltime_factor is None else \
            _rounded(run * g.walltime_factor, spec.resolution) or run * g.walltime_factor
        raw: dict[str, Any] = {"id": full, "subtime": subtime, "res": size, "profile": pname,
                               "walltime": -1 if walltime is None else walltime, **fields}
        jobs.append(JobSpec(full, subtime, size, pname, walltime, raw))
    nb_res = spec.nb_res or max((j.res for j in jobs), default=None)
    workload = Workload(spec.name, jobs, dict(sorted(profiles.items())), nb_res=nb_res,
                        source=f"synth(seed={seed})")
    workload.sort()
    return workload
