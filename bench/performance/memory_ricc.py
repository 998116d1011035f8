r"""Peak memory and CPU of a whole-trace ``simulate``: RICC-2010 once and four times over.

Runs ``python -m batpolicy simulate --policy POLICY -w TRACE -q`` under each interpreter
given (``--version NAME=PYTHON``, e.g. the tree of bf30f5a beside the current one), from
a scratch directory, and reads the child's peak RSS and user + system CPU with
``os.wait4`` (``ru_maxrss``, KiB on Linux). ``--times 4`` first writes the trace four
times over, one copy after another (:func:`repeat_swf`: job numbers renumbered, each
copy's submissions shifted by the previous copies' span plus one day), a reproducible
1.8 M-job input for RICC, then simulates that file.

Usage::

    python bench/performance/memory_ricc.py --version base=/work/venvs/base/bin/python \
        --version now=/work/venvs/stream/bin/python --times 1 4 \
        --save bench/results/memory_ricc.txt
"""

from __future__ import annotations

import argparse
import gzip
import logging
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger("memory_ricc")

RICC = Path("/work/shared/data/traces/RICC-2010-2.swf.gz")
DAY = 86400


def repeat_swf(source: Path, times: int, out: Path) -> Path:
    """Write ``source`` ``times`` times over, one copy after the other, gzipped, to ``out``.

    The header is the source's; copy k's job numbers are ``k * (max number) + number``
    and its submit times ``k * (span + 1 day) + submit``, where span is the source's last
    submit time minus its first. The other fields are kept as they are.

    The source is read line by line (one pass for the numbers, then one per copy), never
    held: the children :func:`measure` starts inherit this process's memory image until
    they exec, and Linux keeps that image's high-water mark in the child's ``ru_maxrss``
    (``exec_mmap`` saves the old mm's peak RSS), so a parent holding RICC's split lines
    (about 470 MiB) would be measured as the child's peak.
    """
    def job_fields() -> Iterator[list[str]]:
        with gzip.open(source, "rt", encoding="latin-1") as f:
            for line in f:
                if line.strip() and not line.startswith(";"):
                    yield line.split()

    shift, low, high = 0, math.inf, -math.inf
    for fields in job_fields():
        shift = max(shift, int(fields[0]))
        submit = float(fields[1])
        low, high = min(low, submit), max(high, submit)
    step = high - low + DAY
    with gzip.open(out, "wt", encoding="latin-1", compresslevel=1) as f:
        with gzip.open(source, "rt", encoding="latin-1") as src:
            f.writelines(line.rstrip("\n") + "\n" for line in src if line.startswith(";"))
        for k in range(times):
            for fields in job_fields():
                submit = float(fields[1]) + k * step
                f.write(" ".join([str(int(fields[0]) + k * shift),
                                  str(int(submit)) if submit.is_integer() else repr(submit),
                                  *fields[2:]]) + "\n")
    return out


def measure(python: str, trace: Path, policy: str, workdir: Path) -> tuple[float, float, float]:
    """(peak RSS MiB, CPU s, wall s) of one ``simulate`` run of ``trace``."""
    out = workdir / "out"
    began = time.perf_counter()
    proc = subprocess.Popen([python, "-m", "batpolicy", "simulate", "--policy", policy,
                             "-w", str(trace), "-o", str(out), "-q"], cwd=workdir,
                            stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    if status != 0:
        raise SystemExit(f"{python} failed on {trace} (status {status})")
    return usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, wall


def main(argv: list[str] | None = None) -> int:
    """Measure each version on RICC once and ``--times`` over; print (and save) the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="append", required=True, metavar="NAME=PYTHON")
    parser.add_argument("--times", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--policy", default="easy")
    parser.add_argument("--trace", type=Path, default=RICC)
    parser.add_argument("--save", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    versions = [v.split("=", 1) for v in args.version]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for times in args.times:
            trace = args.trace if times == 1 else repeat_swf(
                args.trace, times, work / f"x{times}.swf.gz")
            for name, python in versions:
                rss, cpu, wall = measure(python, trace, args.policy, work)
                row = (f"{name:10} x{times}  peak RSS {rss:7.1f} MiB  CPU {cpu:7.1f} s  "
                       f"wall {wall:7.1f} s")
                log.info(row)
                rows.append(row)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent).stdout.strip()
    when = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    text = (f"# bench/performance/memory_ricc.py at {commit}, {when}, "
            f"{sys.version.split()[0]}, policy {args.policy}, {args.trace.name}\n"
            + "\n".join(rows) + "\n")
    print(text, end="")
    if args.save:
        args.save.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
