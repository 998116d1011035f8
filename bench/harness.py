"""One benchmark harness (sortedcontainers' tests/benchmark.py shape).

Each measurement: a warm-up run, then ``repeat`` timed runs; report min / median / max
wall seconds and, when a baseline is given, ``ratio = baseline / ours``. Results go to
``bench/results/<name>.txt`` headed by the commit and the machine, so committed figures
say where they come from. Benchmarks never run in the test suite.
"""

from __future__ import annotations

import os
import platform
import socket
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batpolicy.interpreter import describe

RESULTS = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@dataclass(frozen=True, slots=True)
class Timing:
    """Wall seconds of the timed runs of one measurement."""

    label: str
    runs: tuple[float, ...]

    @property
    def min(self) -> float:
        """Fastest run."""
        return min(self.runs)

    @property
    def median(self) -> float:
        """Median run."""
        return statistics.median(self.runs)

    @property
    def max(self) -> float:
        """Slowest run."""
        return max(self.runs)

    def line(self, baseline: Timing | None = None) -> str:
        """One report line, with ``ratio = baseline / ours`` on medians if given."""
        text = (f"{self.label:<40} min {self.min:9.4f} s  median {self.median:9.4f} s  "
                f"max {self.max:9.4f} s")
        if baseline is not None:
            text += f"  ratio {baseline.median / self.median:7.2f}"
        return text


def measure(label: str, fn: Callable[[], object], *, repeat: int = 5, warmup: int = 1) -> Timing:
    """Time ``fn`` ``repeat`` times after ``warmup`` untimed runs."""
    for _ in range(warmup):
        fn()
    runs = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - began)
    return Timing(label, tuple(runs))


def batsim_messages(transcript: str | Path) -> list[bytes]:
    """Every Batsim message of a recorded conversation, as the bytes Batsim sends."""
    from batpolicy.protocol.codec import encode_request, request_from_obj
    from batpolicy.protocol.transcript import read_transcript

    return [encode_request(request_from_obj(batsim)) for batsim, _ in read_transcript(transcript)]


def free_port() -> int:
    """A TCP port on the loopback that nothing listens on right now (for a scheduler)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def header() -> str:
    """Commit, date and machine, for the top of a results file."""
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--",
                                "batpolicy"],
                               capture_output=True, text=True).stdout.strip()
        commit += " (+uncommitted changes)" if dirty else ""
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return (f"# commit {commit}; {time.strftime('%Y-%m-%d %H:%M:%S')}; "
            f"{describe()}; "
            f"{platform.machine()}, {os.cpu_count()} cores; {platform.platform()}")


#: Separates a results file's newest run from the runs kept below it.
EARLIER = "# ---- earlier runs below ----"


def write_results(name: str, lines: list[str], *, keep_earlier: bool = False) -> Path:
    """Write ``bench/results/<name>.txt`` (header + lines) and return its path.

    ``keep_earlier``: the previous content stays below the new run, after
    :data:`EARLIER` (for a file that is a history of runs, not one table).
    """
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.txt"
    text = "\n".join([header(), *lines]) + "\n"
    if keep_earlier and path.exists():
        earlier = path.read_text()
        text += f"\n{EARLIER}\n\n" + earlier.replace(f"{EARLIER}\n\n", "", 1)
    path.write_text(text)
    return path


def pool_map(fn: Callable[[Any], Any], tasks: Sequence[Any], workers: int | None,
             label: str = "runs") -> Iterator[Any]:
    """``fn(task)`` for every task on a process pool, yielded as they finish, with a bar."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn()) as progress, \
            ProcessPoolExecutor(max_workers=workers) as pool:
        bar = progress.add_task(label, total=len(tasks))
        for future in as_completed([pool.submit(fn, task) for task in tasks]):
            yield future.result()
            progress.advance(bar)
