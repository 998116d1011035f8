"""What an optional output is: a name, its files, how it hears of a run and how it ends.

An :class:`Output` subclass in a module of :mod:`batpolicy.simulator.outputs` is all a new
output takes: the registry (:mod:`.registry`) finds it, ``batpolicy simulate`` and
``fake-batsim`` give it a switch (``--NAME``), and :func:`~batpolicy.simulator.run.run_simulation`
writes it as it writes Batsim's files: under the file's name plus ``.part`` while the run
goes, renamed once it ended (after an error too), before ``metrics.json``; a previous
run's file of the same name is removed first.

The life of one output in one run:

1. built with the paths to write (the ``.part`` names), one per name of :attr:`Output.files`;
2. :meth:`Output.attach`: open the files and hook the simulator through its taps
   (:meth:`~batpolicy.simulator.engine.simulator.Simulator.tap_records`, ``tap_decisions``,
   ``tap_submissions``, ``trace_machine_states``...), before it runs; a run without the
   output pays nothing for it;
3. the run;
4. :meth:`Output.close`: write what is left and close, whether the run ended (``error``
   None) or stopped on an error.

A module here is imported by the command line to build its switches: it imports what
its writing needs inside its methods, not at its top (``batpolicy --help`` must load
no simulator, tests/test_cli.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from batpolicy.simulator.engine.simulator import Simulator

__all__ = ["Output"]


class Output:
    """One optional output of a run (module docstring); subclass it and set the class fields."""

    #: The registry's key and the switch: ``--NAME`` with ``-`` for ``_``, stored as
    #: ``args.NAME``. Empty: an abstract base, not registered.
    name: ClassVar[str] = ""
    #: The files written, by name under the output prefix: ``DIR/NAME`` with ``-o DIR``,
    #: ``PREFIX_NAME`` with ``-e PREFIX``.
    files: ClassVar[tuple[str, ...]] = ()
    #: The switch's help.
    help: ClassVar[str] = ""
    #: For a file Batsim writes unless told not to: Batsim's flag that turns it off (e.g.
    #: ``--disable-schedule-tracing``); ``fake-batsim`` then writes it by default and
    #: takes that flag. None: written only when asked, by either command.
    batsim_disable_flag: ClassVar[str | None] = None

    def __init__(self, paths: Sequence[Path]) -> None:
        if len(paths) != len(self.files):
            raise ValueError(f"output {self.name!r} writes {len(self.files)} file(s), "
                             f"got {len(paths)} path(s)")
        #: Where to write each of :attr:`files`, in order (the ``.part`` names in a run).
        self.paths = tuple(paths)

    def attach(self, simulator: Simulator) -> None:
        """Open the files and hook ``simulator`` (its taps), before it runs."""
        raise NotImplementedError

    def close(self, simulator: Simulator, error: BaseException | None) -> None:
        """Write the rest and close the files once the run stopped (``error``: why, if it failed).

        Called once, also when the run stopped on an error (after :meth:`attach`).
        """
        raise NotImplementedError
