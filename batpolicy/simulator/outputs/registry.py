"""The optional outputs by name: every :class:`~.base.Output` in this folder's modules.

Registration is local: an output is registered by being defined in a module of
:mod:`batpolicy.simulator.outputs` (an :class:`~.base.Output` subclass with a
``name``), nothing else to edit. The modules are imported once, in name order, which is
the order of their switches in ``--help`` and of their files among a run's outputs.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from batpolicy.errors import ConfigError
from batpolicy.simulator.outputs.base import Output

if TYPE_CHECKING:  # the command line imports this module: no writer at its top
    from batpolicy.io.outputs import OutputPaths

__all__ = ["enabled_outputs", "output_files", "registered_outputs"]

_PACKAGE = "batpolicy.simulator.outputs"
#: Modules of the folder that hold no output.
_NOT_OUTPUTS = frozenset({"base", "registry"})


@functools.cache
def registered_outputs() -> Mapping[str, type[Output]]:
    """Name -> class of every output defined in this folder's modules (module docstring).

    >>> registered_outputs()["schedule_trace"].files
    ('schedule.trace',)
    """
    package = importlib.import_module(_PACKAGE)
    found: dict[str, type[Output]] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name in _NOT_OUTPUTS or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{_PACKAGE}.{info.name}")
        for cls in vars(module).values():
            if not (isinstance(cls, type) and issubclass(cls, Output) and cls.name
                    and cls.__module__ == module.__name__):
                continue
            if cls.name in found:
                raise ConfigError(f"two outputs are named {cls.name!r}: "
                                  f"{found[cls.name].__module__} and {cls.__module__}")
            found[cls.name] = cls
    return MappingProxyType(found)


def output_files(names: Iterable[str]) -> tuple[str, ...]:
    """The files of the outputs ``names``, in the registry's order (for ``OutputPaths``).

    >>> output_files(["schedule_trace"])
    ('schedule.trace',)
    """
    wanted = set(names)
    outputs = registered_outputs()
    unknown = wanted - set(outputs)
    if unknown:
        raise ConfigError(f"unknown output(s) {', '.join(sorted(unknown))} "
                          f"(known: {', '.join(outputs)})")
    return tuple(f for name, cls in outputs.items() if name in wanted for f in cls.files)


def enabled_outputs(paths: OutputPaths) -> list[Output]:
    """The outputs whose files ``paths`` names (``paths.extra``), built to write them there.

    In registry order. A file that no output writes, or an output given only some of
    its files, is an error (a file would stay unwritten). Runtime complexity: O(outputs).
    """
    named = {name for name, _ in paths.extra}
    if not named:
        return []
    built: list[Output] = []
    for cls in registered_outputs().values():
        if not named & set(cls.files):
            continue
        where = [paths.file(name) for name in cls.files]
        missing = [name for name, path in zip(cls.files, where, strict=True) if path is None]
        if missing:
            raise ConfigError(f"output {cls.name!r} writes {', '.join(cls.files)}: "
                              f"no path for {', '.join(missing)}")
        built.append(cls(where))  # type: ignore[arg-type]
        named -= set(cls.files)
    if named:
        raise ConfigError(f"no output writes {', '.join(sorted(named))}")
    return built
