"""What :func:`batpolicy.testing.simulate` needs to take a pybatsim scheduler.

A pybatsim user's test names the scheduler as the command line does
(``"pybatsim:easyBackfill"``, ``"pybatsim:path/to/my_sched.py"``) or hands over the
scheduler itself: an instance of a ``batsim.batsim.BatsimScheduler`` subclass, or the
class (built with ``params["options"]``, as pybatsim's launcher builds it with
``-o JSON``). Anything else is one of our own policies: ``None`` here.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from batpolicy.scheduler.state import ClusterState
from batpolicy.simulator.pybatsim.loader import is_pybatsim, load_scheduler, pybatsim_options

__all__ = ["pybatsim_driver"]


def _batsim_scheduler_class() -> type | None:
    """The BatsimScheduler class if pybatsim was imported (a user's object implies it)."""
    module = sys.modules.get("batsim.batsim")
    return getattr(module, "BatsimScheduler", None)


def pybatsim_driver(policy: Any, params: Mapping[str, Any] | None, *, paranoid: bool = True,
                    state: ClusterState | None = None) -> Any:
    """A :class:`~.driver.PybatsimScheduler` for ``policy``, or None if not pybatsim."""
    from batpolicy.simulator.pybatsim.driver import PybatsimScheduler

    params = dict(params or {})
    if is_pybatsim(policy):
        spec = pybatsim_options(policy, params)
        return PybatsimScheduler(load_scheduler(spec), spec.label, protect=spec.protect,
                                 paranoid=paranoid, state=state)
    base = _batsim_scheduler_class()
    if base is None:
        return None
    if isinstance(policy, type) and issubclass(policy, base):
        spec = pybatsim_options(f"pybatsim:{policy.__name__}", params)
        scheduler = policy(dict(spec.options))
    elif isinstance(policy, base):
        if params:
            raise TypeError("params go with a scheduler name or class; this scheduler "
                            "object already has its options")
        spec = pybatsim_options(f"pybatsim:{type(policy).__name__}", {})
        scheduler = policy
    else:
        return None
    return PybatsimScheduler(scheduler, spec.label, protect=spec.protect, paranoid=paranoid,
                             state=state)
