r"""What a user waits for: the whole ``simulate`` command and the quick commands' start-up.

Runs, from a scratch directory and under each interpreter given (``--python NAME=PYTHON``,
e.g. a tree before a change beside the current one, in alternated rounds),
``PYTHON -m batpolicy simulate --policy POLICY -w TRACE -o DIR -q`` on each trace, and
(``--startup``) ``PYTHON -m batpolicy --version`` and ``serve --help``; reads each child's
user + system CPU and peak RSS with ``os.wait4``, and its wall time. Prints the medians
(and every run) and, with ``--save``, writes ``bench/results/<name>.txt`` headed by the
commit and the interpreter. The targets (docs/performance.md): whole KTH-SP2 under 3 s and
whole RICC-2010 under 45 s of wall time, start-up under 0.15 s.

Usage::

    python bench/performance/simulate_time.py --traces KTH RICC --rounds 5 --startup \
        --save startup_simulate
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import SHARED_DATA, write_results  # noqa: E402  (bench/harness.py)

TRACES = {"KTH": "KTH-SP2-1996-2.swf.gz", "RICC": "RICC-2010-2.swf.gz",
          "CEA-Curie": "CEA-Curie-2011-2.1-cln.swf.gz"}


def run(argv: list[str], cwd: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one child process; a failure stops the script."""
    began = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    if status != 0:
        raise SystemExit(f"failed (status {status}): {' '.join(argv)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def commands(python: str, traces: list[Path], policy: str, startup: bool,
             out: Path) -> list[tuple[str, list[str]]]:
    """(label, argv) of what one round runs under one interpreter."""
    todo = [(f"simulate {policy} {trace.name}",
             [python, "-m", "batpolicy", "simulate", "--policy", policy, "-w", str(trace),
              "-o", str(out), "-q"]) for trace in traces]
    if startup:
        todo += [("--version", [python, "-m", "batpolicy", "--version"]),
                 ("serve --help", [python, "-m", "batpolicy", "serve", "--help"])]
    return todo


def main(argv: list[str] | None = None) -> int:
    """Alternate the interpreters for ``--rounds`` rounds; print (and save) the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", action="append", metavar="NAME=PYTHON",
                        help=f"an interpreter to time (default: now={sys.executable})")
    parser.add_argument("--traces", nargs="*", default=["KTH"],
                        help=f"{' '.join(TRACES)} or paths (default: KTH)")
    parser.add_argument("--policy", default="easy")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--startup", action="store_true", help="also time --version, serve --help")
    parser.add_argument("--save", metavar="NAME", help="write bench/results/NAME.txt")
    args = parser.parse_args(argv)
    pythons = [p.split("=", 1) for p in (args.python or [f"now={sys.executable}"])]
    traces = [Path(t) if t not in TRACES else SHARED_DATA / "traces" / TRACES[t]
              for t in args.traces]
    runs: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for name, python in pythons:
                for label, cmd in commands(python, traces, args.policy, args.startup,
                                           Path(tmp) / "out"):
                    runs.setdefault((name, label), []).append(run(cmd, Path(tmp)))
    lines = [f"# command: python {' '.join(sys.argv)}",
             f"# medians of {args.rounds} alternated rounds, run from a scratch directory",
             f"{'version':10} {'command':44} {'wall s':>8} {'cpu s':>8} {'peak MiB':>9}  "
             "runs (wall s)"]
    for (name, label), got in runs.items():
        wall, cpu, rss = (statistics.median(r[i] for r in got) for i in range(3))
        each = " ".join(f"{r[0]:.2f}" for r in got)
        lines.append(f"{name:10} {label:44} {wall:8.2f} {cpu:8.2f} {rss:9.1f}  {each}")
    print("\n".join(lines))
    if args.save:
        print(f"saved {write_results(args.save, lines)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
