r"""Instructions ``batpolicy simulate`` executes, for several versions of the code, on one input.

Wall and CPU times on this 2-core VM move by ±20 % from run to run and with the load of
whatever else runs; the number of instructions a run executes does not. This script runs
each version's ``simulate`` under valgrind's callgrind (``Ir``: instructions executed, the
interpreter's start-up and imports included) on the same input and prints the counts and
their ratios to the first version. Same input, same interpreter binary: a ratio above 1
is work the later code added, whatever the machine was doing. Instructions are not time
(cache misses and branch mispredictions are not counted), so the alternated timings of
``farm-bench`` stay the measure of record; this one tells which change costs what.

Each version is a Python interpreter with ``batpolicy`` installed from that version's tree
(a venv per ``git worktree``). Every version first runs a 10-job warm-up so that its
bytecode caches exist (this VM sets ``PYTHONDONTWRITEBYTECODE=1``; the runs here unset it:
an installed user's runs read cached bytecode). Runs are sequential; each takes about 50
times its normal CPU time. jobs.csv of every version must equal the first's: a row says so.

Usage::

    python bench/performance/simulate_instructions.py --version before=/tmp/old/.venv/bin/python \
        --version after=.venv/bin/python --policy fcfs -w KTH-SP2-1996-2.swf.gz \
        --max-jobs 8000 [--save bench/results/simulate_instructions_kth_fcfs.txt]
"""

from __future__ import annotations

import argparse
import filecmp
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/
from fidelity.batsim_testsuite import save_table  # noqa: E402

log = logging.getLogger("simulate_instructions")

_COLLECTED = re.compile(r"Collected : (\d+)")


def _simulate(python: str, args: argparse.Namespace, out: Path, max_jobs: int,
              valgrind: bool) -> int | None:
    """Run one ``simulate``; its instruction count under callgrind, else None."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [python, "-m", "batpolicy", "simulate", "--policy", args.policy, "-w",
            args.workload, "--max-jobs", str(max_jobs), "-o", str(out), "--no-progress", "-q",
            *args.extra]
    if valgrind:
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}.callgrind",
                *argv]
    run = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=out.parent)
    if run.returncode != 0:
        raise SystemExit(f"{python}: simulate failed: {run.stderr.strip()[-500:]}")
    if not valgrind:
        return None
    found = _COLLECTED.search(run.stderr)
    if found is None:
        raise SystemExit(f"{python}: no callgrind count in its output")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    """Run every version under callgrind and print (or save) the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", action="append", required=True, metavar="LABEL=PYTHON",
                    help="a version: its label and the interpreter that imports it "
                         "(repeat; the first is the reference)")
    ap.add_argument("--policy", default="easy")
    ap.add_argument("-w", "--workload", required=True)
    ap.add_argument("--max-jobs", type=int, default=8000)
    ap.add_argument("--save", type=Path, help="write the table here, with the commit")
    ap.add_argument("extra", nargs="*", help="more simulate arguments (after --)")
    args = ap.parse_args(argv)
    # the runs are made in a scratch folder: files named from here, made absolute
    args.workload = str(Path(args.workload).resolve())
    args.extra = [str(Path(a).resolve()) if not a.startswith("-") and Path(a).is_file()
                  else a for a in args.extra]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if shutil.which("valgrind") is None:
        log.error("valgrind is not installed (apt-get install valgrind)")
        return 2
    versions = [v.split("=", 1) for v in args.version]
    if any(len(v) != 2 for v in versions):
        ap.error("--version wants LABEL=PYTHON")
    work = Path(tempfile.mkdtemp(prefix="simulate-instructions-"))
    counts: list[int] = []
    for label, python in versions:
        _simulate(python, args, work / f"{label}-warm", 10, valgrind=False)
        log.info("%s: under callgrind (%d jobs)", label, args.max_jobs)
        counts.append(_simulate(python, args, work / label, args.max_jobs,  # type: ignore[arg-type]
                                valgrind=True) or 0)
    first = work / versions[0][0] / "jobs.csv"
    lines = [f"# simulate --policy {args.policy} -w {Path(args.workload).name} --max-jobs "
             f"{args.max_jobs} {' '.join(args.extra)}".rstrip(),
             f"# {'version':<12} {'instructions':>16} {'ratio':>7}  jobs.csv"]
    for (label, _), count in zip(versions, counts, strict=True):
        same = filecmp.cmp(first, work / label / "jobs.csv", shallow=False)
        lines.append(f"{label:<14} {count:>16,} {count / counts[0]:>7.3f}  "
                     f"{'identical' if same else 'DIFFERS'}")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.save is not None:
        save_table(args.save, Path(__file__).name, argv, text)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
