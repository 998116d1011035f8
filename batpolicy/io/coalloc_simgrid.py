"""SimGrid parallel-task profiles for co-allocation jobs: Batsim's own network slows them.

Jones, Pang, Stanzione & Ligon, *Bandwidth-aware co-allocating meta-schedulers for
mini-grid architectures* (seed 003), §3.3-§3.7. A job of ``N`` nodes runs ``T_E`` seconds
at full speed, of which ``T_P = K T_E`` compute and ``T_C = (1 - K) T_E`` all-to-all
communication ("performed periodically throughout its execution", §3.3); each node
needs ``PPBW`` byte/s to send and receive (eq. 8 from the run's BSBW). The
bandwidth-centric model (``--job-model bandwidth``) stretches ``T_C`` by the job's
slowdown on its most saturated uplink (eq. 5-7). Here the same job is written as
Batsim profiles so that SimGrid's ptask_L07 model (Batsim 4.2.1's host model) does the
stretching on the uplinks of ``batpolicy platform multicluster``:

- a ``composed`` profile repeating ``R`` iterations of [compute, communicate], with
  ``R = round(T_C / comm_phase)`` (at least 1), so that every job's communication phase
  lasts about ``comm_phase`` seconds at full speed;
- compute: ``parallel_homogeneous`` of ``speed * T_P / R`` flop per node, no ``com``;
- communicate: ``parallel_homogeneous`` of ``speed * T_C / R`` flop per node (the phase
  costs ``T_C / R`` of node time at full network speed: inside one cluster the links are
  1000 GBps and this sets the pace) and ``com = PPBW * (T_C / R) / (2 (N - 1))`` bytes
  from every node to every other. A node then sends and receives ``PPBW * T_C / R``
  bytes per phase, and the uplink of a cluster holding ``n_i`` of the job's nodes (a
  SHARED SimGrid link: both directions count) carries ``n_i (N - n_i) PPBW (T_C / R) /
  (N - 1)`` bytes, i.e. eq. 1's ``BW_i`` during the phase. A ptask progresses at one
  rate on all its resources, so when ``BW_i`` exceeds the share of the uplink SimGrid
  gives it, the phase lasts ``T_C / R * BW_i / share``: eq. 5's slowdown.

A lone co-allocated job is thus slowed exactly as the model says (``T_P + T_C / sd``,
``sd = capacity / max BW_i``). Two things differ under sharing: the model charges a
job's demand on its links during its whole run, SimGrid only during its communication
phases (jobs whose phases do not overlap do not contend); and SimGrid's max-min sharing
gives every ptask on a saturated link the same progress rate, i.e. the same ``sd`` only
when their phases have the same length (hence ``comm_phase``), as Steps 1-5 do (§3.5).

Variant ``profiles=simgrid-mean`` (``mean=True``): ``PPBW`` read as the job's mean rate
over its whole run, i.e. ``T_E / T_C`` times the bytes above: the links then carry on
average what the model charges (eq. 1 during ``T_E``), in bursts; a lone co-allocated
job is slowed as soon as ``BW_i > (1 - K) capacity``, earlier than in the model.

A job of one node (or ``K = 1``, or no ``ppbw``) gets one ``parallel_homogeneous`` of
``speed * T_E`` flop. Job fields (``origin``, ``ppbw``, ``comp_share``, ``bsbw``) are kept,
so the embedded simulator runs the same file with ``--job-model bandwidth`` (its
``T_E`` is the computation-only duration of the profile, see
:func:`batpolicy.simulator.jobmodels.coalloc.profile_runtime`).
"""

from __future__ import annotations

from typing import Any

from batpolicy.errors import ConfigError, InputError
from batpolicy.io.workload import JobSpec, Workload

__all__ = ["DEFAULT_COMM_PHASE", "DEFAULT_SPEED", "job_profiles", "simgrid_profiles"]

#: Seconds of communication per iteration at full speed (every job's phases alike).
DEFAULT_COMM_PHASE = 10.0
#: Flop/s of a node, as ``batpolicy platform multicluster`` writes them (``--speed 1Gf``).
DEFAULT_SPEED = 1e9


def job_profiles(name: str, runtime: float, nodes: int, comp_share: float, ppbw: float,
                 *, speed: float = DEFAULT_SPEED,
                 comm_phase: float = DEFAULT_COMM_PHASE, mean: bool = False
                 ) -> dict[str, dict[str, Any]]:
    """The profiles of one job; the job's own profile is ``name`` (the others ``name_*``).

    >>> p = job_profiles("j", 100.0, 4, 0.7, 3e6, speed=1e9, comm_phase=10.0)
    >>> p["j"]["repeat"], p["j_p"]["cpu"], p["j_c"]["cpu"], p["j_c"]["com"]
    (3, 23333333333.333332, 10000000000.0, 5000000.0)
    >>> job_profiles("k", 5.0, 1, 0.7, 3e6)["k"]
    {'type': 'parallel_homogeneous', 'cpu': 5000000000.0, 'com': 0}
    """
    if not (runtime >= 0 and nodes >= 1 and 0 <= comp_share <= 1 and ppbw >= 0):
        raise ConfigError(f"job {name}: runtime >= 0, nodes >= 1, comp_share in [0, 1] and "
                          f"ppbw >= 0 needed, got {runtime}, {nodes}, {comp_share}, {ppbw}")
    comm = runtime - comp_share * runtime  # T_C (eq. 6-7 split of T_E)
    if nodes == 1 or comm <= 0 or ppbw <= 0:
        return {name: {"type": "parallel_homogeneous", "cpu": speed * runtime, "com": 0}}
    repeat = max(1, round(comm / comm_phase))
    phase = comm / repeat
    volume = ppbw * (runtime / repeat if mean else phase)  # bytes a node moves per phase
    return {
        name: {"type": "composed", "repeat": repeat, "seq": [f"{name}_p", f"{name}_c"]},
        f"{name}_p": {"type": "parallel_homogeneous",
                      "cpu": speed * comp_share * runtime / repeat, "com": 0},
        f"{name}_c": {"type": "parallel_homogeneous", "cpu": speed * phase,
                      "com": volume / (2 * (nodes - 1))},
    }


def _delay(workload: Workload, job: JobSpec) -> float:
    profile = workload.profiles.get(job.profile)
    if not isinstance(profile, dict) or profile.get("type") != "delay":
        raise InputError("SimGrid co-allocation profiles are made from delay profiles "
                         f"(T_E), not {profile!r}", job=job.id)
    return float(profile["delay"])


def simgrid_profiles(workload: Workload, *, speed: float = DEFAULT_SPEED,
                     comm_phase: float = DEFAULT_COMM_PHASE, mean: bool = False) -> Workload:
    """A copy of a co-allocation workload whose jobs run SimGrid parallel tasks.

    Every job needs a ``delay`` profile (its ``T_E``) and the fields ``ppbw`` and
    ``comp_share`` (§3.3, §3.8), as :func:`~.coalloc_traces.coalloc_workload` makes them.
    Runtime complexity: O(jobs).
    """
    if not (speed > 0 and comm_phase > 0):
        raise ConfigError(f"speed and comm_phase must be > 0, got {speed} and {comm_phase}")
    jobs, profiles = [], {}
    for job in workload.jobs:
        try:
            share, ppbw = float(job.raw["comp_share"]), float(job.raw["ppbw"])
        except (KeyError, TypeError, ValueError):
            raise InputError("a co-allocation job needs numeric comp_share and ppbw fields",
                             job=job.id) from None
        name = f"p{job.name}"
        profiles.update(job_profiles(name, _delay(workload, job), job.res, share, ppbw,
                                     speed=speed, comm_phase=comm_phase, mean=mean))
        raw = dict(job.raw, profile=name)
        jobs.append(JobSpec(job.id, job.subtime, job.res, name, job.walltime, raw))
    return Workload(workload.name, jobs, profiles, workload.nb_res, workload.source)
