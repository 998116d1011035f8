r"""Does compiling the hot modules make ``batpolicy simulate`` cheaper? Cython and mypyc, measured.

Issue 44 allows a compiled hot path only if it is built at install from the registry's
packages and measured first. This script is that measurement: it copies the package of
the tree it lives in three ways into a scratch folder,

- ``pure``: the Python sources as they are (the reference implementation);
- ``cython``: the same sources with the listed modules compiled by Cython 3 in its
  pure-Python mode (``cythonize -3 -X annotation_typing=False``: the ``.py`` files
  unchanged, their annotations left to Python, as a compiled build of this code base
  would start);
- ``mypyc``: the listed modules compiled by mypyc (``--follow-imports=silent``: the
  modules not listed stay interpreted), which turns their classes into native classes
  and checks their annotations at run time,

then runs the same ``simulate`` with each variant first on ``PYTHONPATH`` (this
interpreter, the dependencies of its environment), in alternated rounds, from the scratch
folder (never a checkout's root, which would import the checkout). It prints each
variant's build time, the CPU time (user + system) of every round, the median's ratio to
``pure``'s, and whether jobs.csv equals ``pure``'s. A variant that fails to build or to
run is reported with the tail of its error, not hidden.

Needs ``pip install cython mypy`` in the interpreter's environment (both from PyPI) and a C
compiler. Usage (from anywhere; a few minutes per whole-RICC round)::

    python bench/performance/compiled_variants.py -w RICC-2010-2.swf.gz --policy easy \
        --rounds 3 [--save bench/results/compiled_variants_ricc_easy.txt]
"""

from __future__ import annotations

import argparse
import filecmp
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/
from fidelity.batsim_testsuite import save_table  # noqa: E402

log = logging.getLogger("compiled_variants")

REPO = Path(__file__).resolve().parents[2]

#: The modules with the most interpreted time in whole-RICC EASY and in ``serve``'s
#: message path (cProfile's time per module): what a compiled build would compile.
HOT_MODULES = (
    "io/swf_survey.py io/swf_stream.py io/swf.py io/outputs.py io/online.py "
    "io/machine_states.py policies/toolkit/queue.py policies/toolkit/reservation.py "
    "policies/easy.py policies/fcfs.py scheduler/state.py scheduler/dispatch.py "
    "scheduler/checker.py scheduler/jobs.py scheduler/view.py scheduler/rules.py "
    "simulator/records.py simulator/engine/server.py simulator/engine/zero_latency.py "
    "simulator/engine/accounting.py simulator/engine/decisions.py "
    "simulator/engine/validation.py simulator/engine/message_clock.py "
    "simulator/json_quirks.py simulator/core.py simulator/actors.py "
    "simulator/jobmodels/base.py simulator/instant.py simulator/run.py simulator/books.py "
    "simulator/static_jobs.py protocol/intervals.py protocol/codec.py protocol/_wire.py "
    "protocol/wires.py protocol/_plain_reply.py protocol/types.py platforms/facts.py"
).split()

#: What mypyc compiles by default: every hot module it builds and runs, about half of
#: whole-RICC EASY's interpreted time (EASY's decision, the state, the simulator's
#: records, the outputs). The other hot modules fail mypy's checks, define msgspec
#: Structs (which mypyc cannot compile), carry annotations that do not hold at run time
#: (``Workload.jobs`` holds a streamed trace, not a list), or, for
#: ``protocol/intervals.py`` (MachineSet, a subclass of pyroaring's BitMap), build but
#: end the run with a segmentation fault.
MYPYC_MODULES = (
    "policies/toolkit/queue.py policies/toolkit/reservation.py policies/easy.py "
    "scheduler/state.py scheduler/rules.py simulator/records.py "
    "simulator/engine/accounting.py io/outputs.py io/online.py io/machine_states.py"
).split()


@dataclass
class Variant:
    """One copy of the package: how it was built, and its runs."""

    name: str
    root: Path
    modules: list[str]
    build_s: float = 0.0
    error: str = ""
    cpu_s: list[float] = field(default_factory=list)
    same_jobs: bool | None = None


def _copy_package(root: Path) -> None:
    """The package's sources (no bytecode, no built extension) under ``root``."""
    shutil.copytree(REPO / "batpolicy", root / "batpolicy",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c", "build"))


def _build(variant: Variant, jobs: int) -> None:
    """Compile the variant's modules in place; record the time or the error."""
    paths = [f"batpolicy/{m}" for m in variant.modules]
    if variant.name == "cython":
        argv = [sys.executable, "-m", "Cython.Build.Cythonize", "-i", "-3", "-q",
                f"-j{jobs}", "-X", "annotation_typing=False", *paths]
    else:
        argv = [sys.executable, "-m", "mypyc", "--follow-imports=silent", *paths]
    start = time.monotonic()
    run = subprocess.run(argv, cwd=variant.root, capture_output=True, text=True)
    variant.build_s = time.monotonic() - start
    if run.returncode != 0:
        variant.error = "build: " + (run.stderr or run.stdout).strip()[-300:]
        return
    built = list(variant.root.rglob("*.so"))
    log.info("%s: %d extension modules built in %.0f s", variant.name, len(built),
             variant.build_s)


def _simulate(variant: Variant, args: argparse.Namespace, out: Path) -> float | None:
    """CPU seconds (user + system) of one ``simulate`` of this variant, or None."""
    env = dict(os.environ, PYTHONPATH=str(variant.root))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [sys.executable, "-m", "batpolicy", "simulate", "--policy", args.policy, "-w",
            args.workload, "-o", str(out), "--no-progress", "-q"]
    if args.max_jobs:
        argv += ["--max-jobs", str(args.max_jobs)]
    before = os.times()
    run = subprocess.run(argv, cwd=out.parent, capture_output=True, text=True, env=env)
    after = os.times()
    if run.returncode != 0:
        variant.error = f"run: exit {run.returncode}: " + run.stderr.strip()[-300:]
        return None
    return (after.children_user - before.children_user
            + after.children_system - before.children_system)


def _check_import(variant: Variant, scratch: Path) -> None:
    """The variant's first module must come from its own copy, compiled where listed."""
    module = "batpolicy." + variant.modules[0].removesuffix(".py").replace("/", ".") \
        if variant.modules else "batpolicy"
    run = subprocess.run([sys.executable, "-c", f"import {module} as m; print(m.__file__)"],
                         cwd=scratch, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(variant.root)))
    where = run.stdout.strip()
    compiled = where.endswith(".so")
    if not where.startswith(str(variant.root)) or compiled != bool(variant.modules):
        variant.error = variant.error or f"import: {module} came from {where or run.stderr}"


def _measure(args: argparse.Namespace, scratch: Path) -> str:
    """Build the variants in ``scratch``, run them in alternated rounds; the table."""
    modules = {"cython": args.cython_modules, "mypyc": args.mypyc_modules}
    variants = [Variant("pure", scratch / "pure", [])]
    variants += [Variant(name, scratch / name, list(modules[name])) for name in args.variants]
    for variant in variants:
        _copy_package(variant.root)
        if variant.modules:
            _build(variant, args.jobs)
        if not variant.error:
            _check_import(variant, scratch)
    for number in range(1, args.rounds + 1):
        for variant in variants:
            if variant.error:
                continue
            log.info("round %d/%d: %s", number, args.rounds, variant.name)
            cpu = _simulate(variant, args, scratch / f"{variant.name}-out")
            if cpu is not None:
                variant.cpu_s.append(cpu)
    reference = scratch / "pure-out" / "jobs.csv"
    base = statistics.median(variants[0].cpu_s) if variants[0].cpu_s else None
    what = f"--max-jobs {args.max_jobs}" if args.max_jobs else "whole trace"
    lines = [f"# simulate --policy {args.policy} -w {Path(args.workload).name} ({what}), "
             f"{args.rounds} alternated rounds, CPU = user + system of the run",
             f"# {'variant':<8} {'modules':>7} {'build s':>8}  {'CPU s (rounds)':<28} "
             f"{'median':>7} {'ratio':>6}  jobs.csv"]
    for variant in variants:
        if variant.error:
            lines.append(f"{variant.name:<10} {len(variant.modules):>7} {variant.build_s:>8.0f}"
                         f"  FAILED {' '.join(variant.error.split())}")
            continue
        out = scratch / f"{variant.name}-out" / "jobs.csv"
        same = reference.exists() and out.exists() and filecmp.cmp(reference, out,
                                                                   shallow=False)
        median = statistics.median(variant.cpu_s)
        rounds = " ".join(f"{c:.2f}" for c in variant.cpu_s)
        ratio = f"{median / base:.3f}" if base else "-"
        lines.append(f"{variant.name:<10} {len(variant.modules):>7} {variant.build_s:>8.0f}"
                     f"  {rounds:<28} {median:>7.2f} {ratio:>6}  "
                     f"{'identical' if same else 'DIFFERS'}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Build the variants, run them in alternated rounds, print (or save) the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-w", "--workload", required=True)
    ap.add_argument("--policy", default="easy")
    ap.add_argument("--max-jobs", type=int, default=0, help="0: the whole trace")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", nargs="+", default=["cython", "mypyc"],
                    choices=["cython", "mypyc"])
    ap.add_argument("--cython-modules", nargs="+", default=HOT_MODULES, metavar="MODULE",
                    help="paths under batpolicy/ (default: the hot modules)")
    ap.add_argument("--mypyc-modules", nargs="+", default=MYPYC_MODULES, metavar="MODULE")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="parallel compilations (Cython)")
    ap.add_argument("--save", type=Path, help="write the table here, with the commit")
    args = ap.parse_args(argv)
    args.workload = str(Path(args.workload).resolve())
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    with tempfile.TemporaryDirectory(prefix="compiled-variants-") as scratch:  # gone after
        text = _measure(args, Path(scratch))
    sys.stdout.write(text)
    if args.save is not None:
        save_table(args.save, Path(__file__).name, argv, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
