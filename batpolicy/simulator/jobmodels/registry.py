"""The single job-model registry: name → class, open to plug-ins like the policies.

It feeds ``--job-model``, :attr:`SimOptions.job_models` / ``default_job_model`` and a
job's ``job_model`` field. Our models are listed below by ``module:Class`` under
``batpolicy.simulator`` (known without importing any model); other installed
packages add theirs through the entry-point group ``batpolicy.job_models``
(``name = "package.module:Class"``), the mechanism ``batpolicy.policies`` uses for
policies (:mod:`batpolicy.policies.registry`): a newcomer's job model is one new file in
its own package plus one entry point, no edit here.

A spec is ``name`` or ``name:argument``; a class that takes an argument (e.g.
``fixed-penalty:1.25``) says so with a ``from_argument(text)`` class method.

Example models live one module each in :mod:`.examples` and register themselves by being
there: the module ``scaled_delay.py`` is the model ``scaled-delay``, its class the
module's ``JOB_MODEL`` (:data:`EXAMPLE_JOB_MODELS`, names from the folder's listing,
classes imported on first use). They are asked for by name like ours, apart from
:data:`JOB_MODELS` (batpolicy's own models).
"""

from __future__ import annotations

import pkgutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from batpolicy.errors import ConfigError
from batpolicy.plugins import LazyClasses, with_plugins

if TYPE_CHECKING:
    from batpolicy.simulator.jobmodels.base import JobModel

__all__ = ["ENTRY_POINT_GROUP", "EXAMPLE_JOB_MODELS", "JOB_MODELS", "available_job_models",
           "make_job_model"]


#: The entry-point group through which other packages register job models.
ENTRY_POINT_GROUP = "batpolicy.job_models"

#: Our job models: name -> ``module:Class`` under ``batpolicy.simulator``.
_LOCATIONS: dict[str, str] = {
    "profile": "jobmodels.base:ProfileModel",
    "speed": "jobmodels.base:SpeedScaledModel",
    "placement": "jobmodels.base:PlacementModel",
    "bandwidth": "jobmodels.coalloc:BandwidthModel",
    "fixed-penalty": "jobmodels.coalloc:FixedPenaltyModel",
    "ideal": "jobmodels.coalloc:IdealModel",
    "ptask": "jobmodels.ptask.jobmodel:PtaskModel",
}


JOB_MODELS: Mapping[str, type[JobModel]] = LazyClasses("batpolicy.simulator", _LOCATIONS)

#: The example models (module docstring): ``examples/NAME.py`` -> ``NAME`` with ``-``
#: for ``_``, its class the module's ``JOB_MODEL``. A directory listing, no import.
_EXAMPLES: dict[str, str] = {
    info.name.replace("_", "-"): f"jobmodels.examples.{info.name}:JOB_MODEL"
    for info in pkgutil.iter_modules([str(Path(__file__).with_name("examples"))])
    if not info.name.startswith("_")}
EXAMPLE_JOB_MODELS: Mapping[str, type[JobModel]] = LazyClasses("batpolicy.simulator", _EXAMPLES)

def available_job_models() -> Mapping[str, type[JobModel]]:
    """Our job models, plus those other installed packages register as entry points.

    A plug-in whose name is taken by one of ours, that fails to import or that is not a
    :class:`~batpolicy.simulator.jobmodels.base.JobModel` subclass is skipped with a warning
    naming it (never a traceback). Runtime complexity: one scan of the installed
    distributions' metadata.
    """
    from batpolicy.simulator.jobmodels.base import JobModel

    ours = LazyClasses("batpolicy.simulator", {**_LOCATIONS, **_EXAMPLES})
    return with_plugins(ours, ENTRY_POINT_GROUP, JobModel, "job model")


def make_job_model(spec: str | JobModel) -> JobModel:
    """A job model from its registry spec (``name`` or ``name:argument``), or the instance.

    >>> make_job_model("speed").name
    'speed'
    >>> make_job_model("fixed-penalty:1.5").penalty
    1.5
    """
    from batpolicy.simulator.jobmodels.base import JobModel

    if isinstance(spec, JobModel):
        return spec
    name, sep, argument = spec.partition(":")
    models = JOB_MODELS if name in JOB_MODELS else \
        EXAMPLE_JOB_MODELS if name in EXAMPLE_JOB_MODELS else available_job_models()
    cls = models.get(name)
    if cls is None:
        raise ConfigError(f"unknown job model {spec!r} (known: {', '.join(sorted(models))})")
    if not sep:
        return cls()
    from_argument = cls.from_argument
    if from_argument is None:
        raise ConfigError(f"job model {name!r} takes no argument, got {spec!r}")
    return from_argument(argument)
