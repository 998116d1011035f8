"""Synthetic multi-cluster workloads of the co-allocation study: presets ``coalloc-4.3`` / ``-6.1``.

Jones, Pang, Stanzione & Ligon, *Bandwidth-aware co-allocating meta-schedulers for
mini-grid architectures*, IEEE Cluster 2004 / 2005 (seed 003), §3.8 and the two setups:

- §4.3 (``coalloc-4.3``): per cluster, Poisson arrivals of mean inter-arrival 150 s,
  exponential base execution times of mean 225 s, node counts UNIF[10, 90], K = 0.7;
- §6.1 (``coalloc-6.1``): the same with mean 450 s and UNIF[10, 50].

Every job carries the fields the co-allocation model and policy read (issue 10,
interface C): ``origin`` (the cluster it arrives at, named as
``batpolicy platform multicluster`` names them: ``cluster0``..., zero-padded from 10
clusters on), ``comp_share`` (K) and ``ppbw`` (byte/s per processor, from the run's one
``bsbw`` by eq. 8), plus ``bsbw`` itself. Its profile is a ``delay`` of ``T_E``.

Self-contained until the workloads registry (``io/presets.py``, interface D)
lands; :func:`coalloc_workload` is deterministic per seed.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from batpolicy.errors import ConfigError
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.bandwidth import ppbw_from_bsbw

__all__ = ["PRESETS", "CoallocSpec", "cluster_names", "coalloc_workload", "preset",
           "write_workload_json"]


@dataclass(frozen=True, slots=True)
class CoallocSpec:
    """The parameters of one synthetic run (defaults: §6.1 on 4 clusters, BSBW 500 Mbps).

    ``jobs`` is the total over all clusters; ``bsbw`` is in byte/s (500 Mbps = 62.5e6).
    """

    clusters: int = 4
    jobs: int = 40_000
    interarrival: float = 150.0
    runtime: float = 450.0
    nodes: tuple[int, int] = (10, 50)
    comp_share: float = 0.7
    bsbw: float = 62.5e6

    def check(self) -> None:
        """Raise :class:`ConfigError` on a parameter out of range."""
        lo, hi = self.nodes
        if self.clusters <= 0 or self.jobs < 0:
            raise ConfigError(f"coalloc workload: clusters must be > 0 and jobs >= 0, "
                              f"got {self.clusters} and {self.jobs}")
        if not (self.interarrival > 0 and self.runtime > 0):
            raise ConfigError("coalloc workload: interarrival and runtime must be > 0")
        if not 1 <= lo <= hi:
            raise ConfigError(f"coalloc workload: nodes must be 1 <= lo <= hi, got {self.nodes}")
        if not 0 <= self.comp_share <= 1 or self.bsbw < 0:
            raise ConfigError("coalloc workload: comp_share in [0, 1] and bsbw >= 0")


#: The paper's two setups (§4.3 and §6.1).
PRESETS: dict[str, CoallocSpec] = {
    "coalloc-4.3": CoallocSpec(runtime=225.0, nodes=(10, 90)),
    "coalloc-6.1": CoallocSpec(runtime=450.0, nodes=(10, 50)),
}


def preset(name: str, **overrides: Any) -> CoallocSpec:
    """A preset with some fields changed.

    >>> preset("coalloc-4.3", clusters=2).nodes
    (10, 90)
    """
    try:
        spec = PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown preset {name!r} (known: {', '.join(PRESETS)})") from None
    spec = replace(spec, **overrides)
    spec.check()
    return spec


def cluster_names(clusters: int) -> list[str]:
    """Cluster names as ``batpolicy platform multicluster`` writes them.

    >>> cluster_names(3), cluster_names(11)[:2]
    (['cluster0', 'cluster1', 'cluster2'], ['cluster00', 'cluster01'])
    """
    width = len(str(clusters - 1))
    return [f"cluster{i:0{width}d}" for i in range(clusters)]


def coalloc_workload(spec: CoallocSpec, seed: int, name: str = "w0") -> Workload:
    """The run's jobs: one Poisson stream per cluster, merged, the first ``spec.jobs`` kept.

    Times are rounded to the millisecond (at least 1 ms of runtime). Runtime
    complexity: O(jobs log jobs).

    >>> w = coalloc_workload(preset("coalloc-6.1", jobs=5), seed=1)
    >>> len(w.jobs), sorted(w.jobs[0].raw)
    (5, ['bsbw', 'comp_share', 'id', 'origin', 'ppbw', 'profile', 'res', 'subtime', 'walltime'])
    """
    spec.check()
    rng = np.random.default_rng(seed)
    per = math.ceil(spec.jobs / spec.clusters) if spec.jobs else 0
    names = cluster_names(spec.clusters)
    rows: list[tuple[float, int, float, int]] = []
    lo, hi = spec.nodes
    for index in range(spec.clusters):
        arrivals = np.cumsum(rng.exponential(spec.interarrival, per))
        runtimes = rng.exponential(spec.runtime, per)
        sizes = rng.integers(lo, hi + 1, per)
        rows.extend(zip(np.round(arrivals, 3).tolist(), [index] * per,
                        np.maximum(np.round(runtimes, 3), 0.001).tolist(), sizes.tolist(),
                        strict=True))
    rows.sort()
    del rows[spec.jobs:]
    jobs, profiles = [], {}
    for number, (subtime, cluster, runtime, res) in enumerate(rows):
        profile = f"d{number}"
        profiles[profile] = {"type": "delay", "delay": runtime}
        job_id = f"{name}!{number}"
        raw = {"id": job_id, "subtime": subtime, "res": res, "profile": profile,
               "walltime": -1, "origin": names[cluster], "comp_share": spec.comp_share,
               "ppbw": ppbw_from_bsbw(spec.bsbw, res), "bsbw": spec.bsbw}
        jobs.append(JobSpec(job_id, subtime, res, profile, None, raw))
    # Batsim 4.2.1 refuses a workload without nb_res (workload.cpp): the largest job
    workload = Workload(name, jobs, profiles, nb_res=max((j.res for j in jobs), default=1),
                        source=None)
    workload.sort()
    return workload


def write_workload_json(workload: Workload, path: str | Path) -> Path:
    """Write ``workload`` as a Batsim JSON workload (job ids without the ``w0!`` prefix)."""
    jobs = []
    for job in workload.jobs:
        raw = dict(job.raw)
        raw["id"] = job.name
        jobs.append(raw)
    nb_res = workload.nb_res or max((job.res for job in workload.jobs), default=1)
    data = {"nb_res": nb_res, "jobs": jobs, "profiles": workload.profiles}
    path = Path(path)
    path.write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n")
    return path
