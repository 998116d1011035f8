"""An example job model: delay profiles run longer by a factor, ``--job-model scaled-delay:F``.

A ``delay`` profile runs ``delay x slowdown``, where ``slowdown`` is the profile's own
``slowdown`` field when it has one (a per-job factor, e.g. a job known to run badly on
this machine) and the model's argument ``F`` otherwise (default 1: Batsim's delay). The
walltime caps the end as in Batsim: a job whose scaled runtime reaches it is killed
then, ``COMPLETED_WALLTIME_REACHED``. Other profile types are refused when the workload
loads.

It is the whole of a job model (docs/simulator.md, "Adding a job model"): this module is
all there is, found by the registry as ``scaled-delay`` because it sits in
:mod:`batpolicy.simulator.jobmodels.examples` and names its class ``JOB_MODEL``; the
model argument arrives through the optional hook ``from_argument``
(tests/sim/test_example_jobmodel.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from batpolicy.errors import ConfigError, InputError
from batpolicy.protocol.types import JobState
from batpolicy.simulator.jobmodels.base import JobModel, ModelContext, RunningJob, check_profile

__all__ = ["JOB_MODEL", "ScaledDelayModel"]


class ScaledDelayModel(JobModel):
    """``delay x slowdown`` (module docstring).

    >>> from types import SimpleNamespace
    >>> job = SimpleNamespace(profile="p", profile_data={"type": "delay", "delay": 10},
    ...                       walltime=None, start=0.0)
    >>> ScaledDelayModel.from_argument("1.5").start(job, 0.0, None), job.outcome.value
    (15.0, 'COMPLETED_SUCCESSFULLY')
    >>> job.profile_data["slowdown"] = 3; ScaledDelayModel(1.5).start(job, 0.0, None)
    30.0
    """

    name = "scaled-delay"

    def __init__(self, slowdown: float = 1.0) -> None:
        if not slowdown > 0:
            raise ConfigError(f"scaled-delay's slowdown must be > 0, got {slowdown}")
        self.slowdown = slowdown

    @classmethod
    def from_argument(cls, argument: str) -> ScaledDelayModel:  # type: ignore[override]
        """``scaled-delay:1.5``: the slowdown of profiles that do not give their own."""
        try:
            return cls(float(argument))
        except ValueError:
            raise ConfigError(f"scaled-delay:<factor> wants a number, got {argument!r}"
                              ) from None

    def check(self, workload: str, name: str, profiles: Mapping[str, dict[str, Any]]) -> None:
        """A ``delay`` profile, with a positive ``slowdown`` if it has one."""
        check_profile(workload, name, profiles)
        profile = profiles[name]
        if profile.get("type") != "delay":
            raise InputError(f"the scaled-delay model runs delay profiles, not "
                             f"{profile.get('type')!r}", field=f"{workload}!{name}")
        slowdown = profile.get("slowdown", 1.0)
        if isinstance(slowdown, bool) or not isinstance(slowdown, (int, float)) \
                or not slowdown > 0:
            raise InputError(f"'slowdown' must be a number > 0, got {slowdown!r}",
                             field=f"{workload}!{name}")

    def start(self, job: RunningJob, now: float, ctx: ModelContext) -> float:
        """The scaled delay, capped by the walltime. Runtime complexity: O(1)."""
        profile = job.profile_data
        runtime = float(profile["delay"]) * float(profile.get("slowdown", self.slowdown))
        job.mstate = runtime
        if job.walltime is not None and runtime >= job.walltime:
            job.outcome, job.return_code = JobState.COMPLETED_WALLTIME_REACHED, -1
            return now + job.walltime
        ret = int(profile.get("ret", 0))
        job.outcome = JobState.COMPLETED_SUCCESSFULLY if ret == 0 else JobState.COMPLETED_FAILED
        job.return_code = ret
        return now + runtime

    def natural(self, job: RunningJob, ctx: ModelContext) -> tuple[float, JobState, int]:
        """Start plus the scaled delay, ignoring the walltime."""
        ret = int(job.profile_data.get("ret", 0))
        state = JobState.COMPLETED_SUCCESSFULLY if ret == 0 else JobState.COMPLETED_FAILED
        return job.start + job.mstate, state, ret

    def progress(self, job: RunningJob, now: float, ctx: ModelContext) -> dict[str, Any]:
        """Fraction of the scaled delay elapsed at ``now``."""
        runtime = job.mstate
        value = (now - job.start) / runtime if runtime > 0 else 1.0
        return {"profile_name": job.profile, "progress": min(value, 1.0)}


#: The class the registry finds for ``scaled-delay``.
JOB_MODEL = ScaledDelayModel
