"""Where campaign runs execute: a local process pool, or an existing Dask cluster.

Both executors take the same picklable tasks (:func:`~.task.run_task` with a
:class:`~.spec.RunSpec` and the output folder) and yield each run's row as it finishes,
in completion order. The Dask executor needs ``dask[distributed]`` (the ``dask`` extra)
and workers that see the same file system as the campaign (they write the run folders).
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from batpolicy.app.campaign.spec import RunSpec
from batpolicy.errors import ConfigError

log = logging.getLogger(__name__)

Task = Callable[[RunSpec, str], dict[str, Any]]


class Executor(Protocol):
    """Runs tasks somewhere and yields their results as they finish."""

    #: How many runs execute at once (for the progress line).
    workers: int

    def run(self, task: Task, specs: Sequence[RunSpec], output: str) -> Iterator[dict[str, Any]]:
        """Yield ``task(spec, output)`` for every spec, in completion order."""
        ...

    def close(self) -> None:
        """Stop: cancel what has not started; finished results are already yielded."""
        ...


class LocalPool:
    """A local process pool; ``workers`` processes (default: every core).

    Interrupted (Ctrl-C, SIGTERM), it terminates its workers at once: a run cut short
    writes no row and is redone by the next pass; finished runs are already on disk.
    """

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers if workers and workers > 0 else (os.cpu_count() or 1)
        self._pool: Any = None
        self._finished = False

    def run(self, task: Task, specs: Sequence[RunSpec], output: str) -> Iterator[dict[str, Any]]:
        """Yield each run's row as it finishes."""
        import multiprocessing

        self._pool = multiprocessing.Pool(self.workers, initializer=_quiet_worker)
        yield from self._pool.imap_unordered(_call, [(task, s, output) for s in specs],
                                             chunksize=1)
        self._finished = True

    def close(self) -> None:
        """Let the workers go: joined after a whole pass, terminated after an interrupt."""
        if self._pool is None:
            return
        if self._finished:
            self._pool.close()
            self._pool.join()
        else:
            self._pool.terminate()
            self._pool.join()
        self._pool = None


def _call(args: tuple[Task, RunSpec, str]) -> dict[str, Any]:
    task, spec, output = args
    return task(spec, output)


class DaskCluster:
    """An existing Dask distributed cluster, given its scheduler's address."""

    def __init__(self, address: str) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise ConfigError("--dask needs dask.distributed: pip install "
                              "'batpolicy[dask]'") from None
        try:
            self._client = Client(address, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise ConfigError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        self.workers = max(sum(self._client.nthreads().values()), 1)
        self._futures: list[Any] = []

    def run(self, task: Task, specs: Sequence[RunSpec], output: str) -> Iterator[dict[str, Any]]:
        """Submit every run to the cluster; yield rows as workers finish them."""
        from distributed import as_completed

        self._futures = [self._client.submit(task, spec, output, pure=False,
                                             key=f"batpolicy-{spec.run_id}-{os.getpid()}")
                         for spec in specs]
        for future in as_completed(self._futures):
            yield future.result()

    def close(self) -> None:
        """Cancel what the cluster has not run yet, and disconnect."""
        if self._futures:
            self._client.cancel(self._futures)
        self._client.close()


def _quiet_worker() -> None:
    """Workers log warnings only, and leave stop signals to the campaign's process.

    The campaign's progress is the one voice on stderr. Ctrl-C reaches every process of
    the terminal's foreground group, workers included: they ignore SIGINT, and take
    SIGTERM and SIGHUP the default way (a forked worker inherits the parent's handlers,
    which raise :class:`~batpolicy.scheduler.stop_signals.Stopped`: each worker then
    printed its traceback). The parent, stopped, terminates them (:meth:`LocalPool.close`);
    a run cut short writes no row and is redone by the next pass.
    """
    logging.getLogger("batpolicy").setLevel(logging.WARNING)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)


def make_executor(dask: str | None, workers: int | None) -> Executor:
    """A :class:`DaskCluster` when an address is given, else a :class:`LocalPool`."""
    return DaskCluster(dask) if dask else LocalPool(workers)
