"""Platform models, SimGrid/Batsim XML reading, the view from SIMULATION_BEGINS, generators."""

from batpolicy.lazy import lazy_getattr

#: Public name -> submodule that defines it, loaded on first access (PEP 562), so that
#: building the command line (which imports this package) loads no model.
_LAZY = dict.fromkeys(("Group", "Link", "Machine", "Platform"), "model")

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY)
