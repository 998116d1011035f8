"""Names of a package loaded from its submodules on first access (PEP 562).

The packages that the command line imports (:mod:`batpolicy.protocol`,
:mod:`batpolicy.platforms`, :mod:`batpolicy.io`, :mod:`batpolicy.simulator`)
export their public names this way, so that ``batpolicy --help`` loads no model, reader
or simulator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``name`` from submodule ``table[name]``.

    A ``table`` value that starts with ``batpolicy.`` is a module's full name (a name the
    package re-exports from another room).

    >>> get = lazy_getattr("batpolicy", {"InputError": "errors"})
    >>> get("InputError").__name__
    'InputError'
    >>> get("nothing")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    AttributeError: module 'batpolicy' has no attribute 'nothing'
    """
    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        full = module if module.startswith("batpolicy.") else f"{package}.{module}"
        return getattr(import_module(full), name)

    return __getattr__
