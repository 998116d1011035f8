"""Batsim-like command-line flags of the embedded simulator (Batsim's protocol: options)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from batpolicy.errors import ConfigError

__all__ = ["SimOptions"]


@dataclass(frozen=True, slots=True)
class SimOptions:
    """What Batsim would be told on its command line, plus the job model of each workload.

    ``dynamic_jobs`` (``--enable-dynamic-jobs``), ``acknowledge_dynamic_jobs``
    (``--acknowledge-dynamic-jobs``), ``profile_reuse`` (``--enable-profile-reuse``),
    ``forward_profiles`` (``--forward-profiles-on-submission``), ``forward_unknown_events``
    (``--forward-unknown-events``), ``mmax`` (``--mmax``: keep the first machines only),
    ``energy`` (``-E``: only SET_RESOURCE_STATE and the energy QUERY depend on it; no
    energy is modelled), ``compute_sharing`` (``--enable-compute-sharing``: jobs may
    share machines, their tasks then share the CPUs as SimGrid parallel tasks),
    ``sched_config`` (``--sched-cfg``, forwarded in SIMULATION_BEGINS).

    ``job_models`` maps a workload name to a job model name of
    :data:`batpolicy.simulator.jobmodels.registry.JOB_MODELS` (or to a model instance);
    workloads not listed use ``default_job_model``; a job's ``job_model`` field overrides
    both. ``instant_model`` is an :class:`~batpolicy.simulator.instant.InstantModel`
    called once per instant to move ends (job models that are also instant models are
    called anyway). ``batsim_version`` is what ``schedule.csv`` reports.

    >>> SimOptions(dynamic_jobs=True, profile_reuse=True).config()["profile-reuse-enabled"]
    True
    """

    dynamic_jobs: bool = False
    acknowledge_dynamic_jobs: bool = False
    profile_reuse: bool = False
    forward_profiles: bool = False
    forward_unknown_events: bool = False
    mmax: int | None = None
    energy: bool = False
    compute_sharing: bool = False
    sched_config: str = ""
    job_models: Mapping[str, Any] = field(default_factory=dict)
    default_job_model: str = "profile"
    instant_model: Any = None
    batsim_version: str = ""

    def __post_init__(self) -> None:
        if self.acknowledge_dynamic_jobs and not self.dynamic_jobs:
            raise ConfigError("acknowledge_dynamic_jobs needs dynamic_jobs "
                              "(Batsim: --acknowledge-dynamic-jobs with --enable-dynamic-jobs)")
        if self.profile_reuse and not self.dynamic_jobs:
            raise ConfigError("profile_reuse needs dynamic_jobs "
                              "(Batsim: --enable-profile-reuse with --enable-dynamic-jobs)")
        if self.mmax is not None and self.mmax <= 0:
            raise ConfigError(f"mmax must be a positive number of machines, got {self.mmax}")

    def config(self) -> dict[str, Any]:
        """The ``config`` object of SIMULATION_BEGINS, as Batsim 4.2.1 sends it."""
        return {
            "redis-enabled": False,
            "redis-hostname": "127.0.0.1",
            "redis-port": 6379,
            "redis-prefix": "default",
            "profiles-forwarded-on-submission": self.forward_profiles,
            "dynamic-jobs-enabled": self.dynamic_jobs,
            "dynamic-jobs-acknowledged": self.acknowledge_dynamic_jobs,
            "profile-reuse-enabled": self.profile_reuse,
            "sched-config": self.sched_config,
            "forward-unknown-events": self.forward_unknown_events,
        }
