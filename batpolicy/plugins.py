"""Registries of classes by name: ours imported on first use, others' through entry points.

One mechanism for the two registries open to plug-ins, the policies
(:mod:`batpolicy.policies.registry`, group ``batpolicy.policies``) and the simulator's job
models (:mod:`batpolicy.simulator.jobmodels.registry`, group ``batpolicy.job_models``).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["LazyClasses", "with_plugins"]

log = logging.getLogger(__name__)


class LazyClasses(Mapping[str, Any]):
    """Read-only name -> class; a class's module is imported on first access.

    ``locations`` maps a name to ``module:Class`` under ``package``. Runtime complexity:
    O(1) per access after the module's import.

    >>> reg = LazyClasses("batpolicy", {"input": "errors:InputError"})
    >>> reg["input"].__name__, "input" in reg, len(reg)
    ('InputError', True, 1)
    """

    def __init__(self, package: str, locations: Mapping[str, str]) -> None:
        self._package = package
        self._locations = dict(locations)

    def __getitem__(self, name: str) -> Any:
        module, _, cls = self._locations[name].partition(":")
        return getattr(importlib.import_module(f"{self._package}.{module}"), cls)

    def __iter__(self) -> Iterator[str]:
        return iter(self._locations)

    def __len__(self) -> int:
        return len(self._locations)

    def __contains__(self, name: object) -> bool:
        return name in self._locations


def with_plugins(ours: Mapping[str, type], group: str, base: type, kind: str
                 ) -> Mapping[str, type]:
    """``ours`` plus the ``base`` subclasses other installed packages register in ``group``.

    A plug-in whose name is taken by one of ours, that fails to import or that is not a
    ``base`` subclass is skipped with a warning naming it (never a traceback); one
    without a ``name`` gets its entry point's. Runtime complexity: one scan of the
    installed distributions' metadata.
    """
    from importlib import metadata  # ~20 ms: only the commands that need plug-ins

    found: dict[str, type] = dict(ours)
    for ep in metadata.entry_points(group=group):
        if ep.name in ours:
            log.warning("%s plug-in '%s' (%s) ignored: the name is taken by batpolicy's "
                        "own %s", kind, ep.name, ep.value, kind)
            continue
        try:
            cls = ep.load()
        except Exception as exc:  # a broken plug-in must not break every command
            log.warning("%s plug-in '%s' (%s) cannot be loaded: %s: %s", kind, ep.name,
                        ep.value, type(exc).__name__, exc)
            continue
        if not (isinstance(cls, type) and issubclass(cls, base)):
            log.warning("%s plug-in '%s' (%s) is not a %s subclass", kind, ep.name, ep.value,
                        base.__name__)
            continue
        if not cls.name:
            cls.name = ep.name
        found[ep.name] = cls
    return MappingProxyType(found)
