"""How a command stops on a signal: one exception naming it, outputs written in full.

``batpolicy`` turns SIGINT (Ctrl-C), SIGTERM (``kill``, ``timeout``, a batch system's
end of allocation) and SIGHUP (the terminal closed) into :class:`Stopped`, a
:class:`KeyboardInterrupt` that names the signal: every command's ``except
KeyboardInterrupt`` handles it, and a simulation records which signal stopped it
(``metrics.json``'s ``stopped_by``). While a run writes its outputs after it stopped,
:func:`outputs_first` holds further signals back (a second Ctrl-C, or a SIGTERM
following a SIGINT), so the outputs are complete however the run stops; SIGKILL
cannot be caught, and leaves ``jobs.csv`` as far as it got.

A signal that the process inherited as ignored (SIGINT in a background job, SIGHUP
under ``nohup``) stays ignored.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["STOP_SIGNALS", "Stopped", "outputs_first", "stop_on_signals", "stopped_by"]

log = logging.getLogger(__name__)

#: The signals that stop a command cleanly (those the platform has).
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                     if hasattr(signal, name))


class Stopped(KeyboardInterrupt):
    """The command was stopped by the signal ``signal_name`` (``"SIGTERM"``...)."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signal.Signals(signum).name)


def stopped_by(error: BaseException | None) -> str | None:
    """What stopped a run: None (it ended), a signal's name, or the kind of error.

    The kinds: ``"timeout"``, ``"peer lost"`` (the other end's connection closed),
    ``"error"``.

    >>> stopped_by(None), stopped_by(Stopped("SIGTERM")), stopped_by(KeyboardInterrupt())
    (None, 'SIGTERM', 'SIGINT')
    """
    from batpolicy.errors import PeerLost, PeerTimeout

    if error is None:
        return None
    if isinstance(error, Stopped):
        return error.signal_name
    if isinstance(error, KeyboardInterrupt):  # Python's own SIGINT handler
        return "SIGINT"
    if isinstance(error, PeerLost):
        return "peer lost"
    return "timeout" if isinstance(error, PeerTimeout) else "error"


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Inside: each of :data:`STOP_SIGNALS` not ignored raises :class:`Stopped`.

    The previous handlers are put back on exit. Outside the main thread (where Python
    allows no handler), nothing changes.
    """
    if not _in_main_thread():
        yield
        return
    previous = {}
    for signum in STOP_SIGNALS:
        current = signal.getsignal(signum)
        if current is signal.SIG_IGN:
            continue
        previous[signum] = current
        signal.signal(signum, _raise_stopped)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def outputs_first(what: str = "the outputs", *, stopping: bool = False) -> Iterator[None]:
    """Inside: a stop signal is logged and held back until ``what`` is written.

    Only signals that have a Python handler are held (a library caller's default
    SIGTERM still ends the process at once). On exit the handlers are put back, and the
    first signal held back is raised as :class:`Stopped`, unless the run is ``stopping``
    already or an exception leaves the block (what stopped it is what gets reported).
    """
    if not _in_main_thread():
        yield
        return
    held: list[str] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        """Log the signal and keep it for the end of the block."""
        name = signal.Signals(signum).name
        log.warning("%s received while writing %s: finishing them first", name, what)
        held.append(name)

    previous = {}
    for signum in STOP_SIGNALS:
        current = signal.getsignal(signum)
        if callable(current):
            previous[signum] = current
            signal.signal(signum, hold)
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if held and not (failed or stopping):
            raise Stopped(held[0])
