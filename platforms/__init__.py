"""Platform models, SimGrid/Batsim XML reading, the view from SIMULATION_BEGINS, generators."""

from importlib import import_module
from typing import Any

#: Public name -> submodule that defines it, loaded on first access (PEP 562), so that
#: building the command line (which imports :mod:`.cli`) loads no model.
_LAZY = dict.fromkeys(("Group", "Link", "Machine", "Platform"), "model")

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    """Load a platform name's module on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
