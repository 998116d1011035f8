"""Find and build a pybatsim scheduler as ``pybatsim NAME -o JSON`` does, refusing non-schedulers.

``--policy pybatsim:NAME`` names a module of pybatsim's bundled ``schedulers`` package
(``easyBackfill``, ``fillerSched``, ...); ``--policy pybatsim:path/to/my_sched.py`` a file
of the user's. Both are loaded by pybatsim 3.2.1's own loader,
``batsim.tools.launcher.instanciate_scheduler``: the module ``fooBar`` must define the
class (or ``batsim.sched`` function) ``FooBar``, which is called with the options. Where
that loader prints a message and calls ``sys.exit``, or the module fails to import, the
user gets one :class:`~batpolicy.errors.ConfigError` naming the scheduler, before any
simulation starts; so does anything that is not, in the end, a
``batsim.batsim.BatsimScheduler``.

The options are pybatsim's ``-o JSON`` / ``-O FILE`` / ``-p``, given as policy
parameters: ``--param options=JSON``, ``--param options-file=FILE``,
``--param protect=true`` (:func:`pybatsim_options`).

pybatsim is optional: it is imported only here and in :mod:`.driver`, when a
``pybatsim:`` policy is asked for (:func:`import_pybatsim` says how to install it).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batpolicy.errors import ConfigError, clip

__all__ = ["PREFIX", "PybatsimSpec", "import_pybatsim", "is_pybatsim", "load_scheduler",
           "pybatsim_options"]

#: The policy-name prefix that selects a pybatsim scheduler.
PREFIX = "pybatsim:"
#: The pybatsim release whose ``Batsim`` class the driver runs (its 3.2 line).
SUPPORTED = "3.2"
#: What a user runs to get it (docs/pybatsim.md explains why ``--no-deps``).
INSTALL = ("pip install 'batpolicy[pybatsim]' && pip install --no-deps pybatsim==3.2.1")


def is_pybatsim(policy: object) -> bool:
    """Whether a ``--policy`` value names a pybatsim scheduler.

    >>> is_pybatsim("pybatsim:easyBackfill"), is_pybatsim("easy")
    (True, False)
    """
    return isinstance(policy, str) and policy.startswith(PREFIX)


@dataclass(frozen=True, slots=True)
class PybatsimSpec:
    """A pybatsim scheduler to run: its name or file, and pybatsim's launcher options."""

    target: str
    options: Mapping[str, Any] = field(default_factory=dict)
    protect: bool = False

    @property
    def label(self) -> str:
        """How errors and ``metrics.json`` name it: ``pybatsim:TARGET``."""
        return PREFIX + self.target

    @property
    def is_file(self) -> bool:
        """Whether it is a file (pybatsim's rule: the name holds ``.`` or ``/``)."""
        return "." in self.target or "/" in self.target


def pybatsim_options(policy: str, params: Mapping[str, Any]) -> PybatsimSpec:
    """The spec of ``--policy pybatsim:TARGET`` with its ``--param`` values.

    >>> pybatsim_options("pybatsim:easyBackfill", {"options": '{"a": 1}'}).options
    {'a': 1}
    >>> pybatsim_options("pybatsim:x", {"depth": "2"})
    Traceback (most recent call last):
    ...
    batpolicy.errors.ConfigError: pybatsim:x: unknown parameter depth (pybatsim's \
launcher options are: options=JSON (its -o), options-file=FILE (its -O), protect=true (its -p))
    """
    target = policy[len(PREFIX):] if is_pybatsim(policy) else policy
    if not target:
        raise ConfigError("--policy pybatsim: needs a scheduler, e.g. pybatsim:easyBackfill "
                          "or pybatsim:path/to/my_sched.py")
    label = PREFIX + target
    unknown = sorted(set(params) - {"options", "options-file", "protect"})
    if unknown:
        raise ConfigError(f"{label}: unknown parameter {', '.join(unknown)} (pybatsim's "
                          "launcher options are: options=JSON (its -o), options-file=FILE "
                          "(its -O), protect=true (its -p))")
    options: Any = {}
    if "options-file" in params:  # pybatsim's launcher: the file wins over -o
        path = str(params["options-file"])
        try:
            options = json.loads(Path(path).read_text())
        except OSError as exc:
            raise ConfigError(f"{label}: cannot read options-file {path}: "
                              f"{exc.strerror or exc}") from None
        except ValueError as exc:
            raise ConfigError(f"{label}: options-file {path} is not JSON: {exc}") from None
    elif "options" in params:
        value = params["options"]
        if isinstance(value, str):
            try:
                options = json.loads(value)
            except ValueError as exc:
                raise ConfigError(f"{label}: options={clip(value, 80)!r} is not JSON: "
                                  f"{exc}") from None
        else:
            options = value
    if not isinstance(options, dict):
        raise ConfigError(f"{label}: the options must be a JSON object, got "
                          f"{type(options).__name__}")
    protect = params.get("protect", False)
    if isinstance(protect, str):
        if protect.lower() not in ("true", "false", "1", "0", "yes", "no"):
            raise ConfigError(f"{label}: protect={protect!r} is not a boolean")
        protect = protect.lower() in ("true", "1", "yes")
    return PybatsimSpec(target, options, bool(protect))


def import_pybatsim() -> Any:
    """The ``batsim.batsim`` module of pybatsim, or one ConfigError saying how to install it."""
    try:
        from batsim import batsim as module
    except ImportError as exc:
        raise ConfigError(f"pybatsim is not installed ({exc}); install it with: "
                          f"{INSTALL}") from None
    try:
        from importlib.metadata import version

        found = version("pybatsim")
    except Exception:  # noqa: BLE001 - metadata missing: a source checkout, tried as is
        found = None
    if found is not None and not found.startswith(SUPPORTED + "."):
        raise ConfigError(f"pybatsim {found} is installed; the in-process driver runs "
                          f"pybatsim {SUPPORTED}.x (install it with: {INSTALL})")
    return module


def load_scheduler(spec: PybatsimSpec) -> Any:
    """The scheduler object pybatsim's launcher would run; ConfigError if there is none.

    Runtime complexity: importing the scheduler's module (once per process: Python
    caches it) and calling its class with the options.
    """
    module = import_pybatsim()
    from batsim.tools.launcher import instanciate_scheduler

    if spec.is_file:
        path = Path(spec.target)
        if not path.is_file():
            raise ConfigError(f"{spec.label}: no such file {spec.target}")
        if path.suffix != ".py":
            raise ConfigError(f"{spec.label}: not a Python file (a pybatsim scheduler is a "
                              f"module my_sched.py defining class My_sched)")
    elif importlib.util.find_spec("schedulers") is None:
        raise ConfigError(f"{spec.label}: pybatsim's bundled 'schedulers' package is missing")
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said):  # the launcher prints, then exits
            scheduler = instanciate_scheduler(spec.target, options=dict(spec.options))
    except SystemExit:
        message = " ".join(said.getvalue().split()) or "pybatsim's loader exited"
        raise ConfigError(f"{spec.label}: {message} (pybatsim looks for class "
                          f"{_class_name(spec)})") from None
    except Exception as exc:  # the module's import or the class's __init__ failed
        innermost = traceback.extract_tb(exc.__traceback__)[-1].filename
        if Path(innermost).parts[-3:] == ("batsim", "tools", "launcher.py"):
            # the loader's own call of what it found failed: not a scheduler class
            raise ConfigError(f"{spec.label}: {_class_name(spec)} is not a pybatsim "
                              f"scheduler ({type(exc).__name__}: {clip(str(exc), 120)}; "
                              f"expected a subclass of batsim.batsim.BatsimScheduler or a "
                              f"batsim.sched scheduler)") from None
        raise ConfigError(f"{spec.label}: cannot be loaded: {type(exc).__name__}: "
                          f"{clip(str(exc), 160)}{_where(exc)}") from None
    finally:
        printed = said.getvalue()
    if printed.strip():  # a scheduler printing at import time: shown, as pybatsim would
        sys.stdout.write(printed)  # the scheduler's own output, not ours
    if not isinstance(scheduler, module.BatsimScheduler):
        raise ConfigError(f"{spec.label}: {_class_name(spec)} is not a pybatsim scheduler "
                          f"(got {type(scheduler).__name__}; expected a subclass of "
                          "batsim.batsim.BatsimScheduler or a batsim.sched scheduler)")
    return scheduler


def _class_name(spec: PybatsimSpec) -> str:
    """The class pybatsim looks for (its ``module_to_class``): ``my_sched.py`` -> ``My_sched``."""
    module = Path(spec.target).name.split(".")[0] if spec.is_file else spec.target
    return module[:1].upper() + module[1:]


def _where(exc: BaseException) -> str:
    """``, at FILE:LINE``: the innermost frame outside importlib (the user's line)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if "importlib" not in f.filename and not f.filename.startswith("<")]
    if not frames:
        return ""
    last = frames[-1]
    return f", at {last.filename}:{last.lineno}"
