"""Batsim 4.2.1's own test matrix on real Batsim and on ``batpolicy fake-batsim``: a table.

Every case of Batsim's ``test/`` suite that drives batsched over ZeroMQ (no Redis, SMPI,
DAX workflow or pybatsim-only case) is run twice with the same batsched command: beside
real Batsim and beside fake-batsim (``tests/batsim_suite.py`` says how the matrix is
expanded and what is compared). Prints one row per case and the counts the simulator
issues are judged by: same outcome, both clean, same jobs; energy cases apart.

    python bench/fidelity/batsim_testsuite.py                   # whole matrix, table on stdout
    python bench/fidelity/batsim_testsuite.py --match kill -j 2 \
        --save bench/results/batsim_testsuite.txt

Needs Batsim built (the build script of the shared folder beside the clone, outside the
repository, or ``--batsim-prefix``).
"""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))

import batsim_suite  # noqa: E402

log = logging.getLogger("batsim_testsuite")


def summary(rows: list[dict]) -> list[str]:
    """The counts, energy cases apart."""
    out = []
    for label, pick in (("non-energy", False), ("energy", True)):
        sel = [r for r in rows if r["applicable"] and r.get("energy") == pick]
        same_outcome = sum(r["verdict"] != "OUTCOME" for r in sel)
        clean = [r for r in sel if r["batsim"] == "ok" and r["fake"] == "ok"]
        same_jobs = sum(r["verdict"] in ("same", "SCHEDULE", "MSTATES", "ENERGY", "PSTATES")
                        for r in clean)
        all_same = sum(r["verdict"] == "same" for r in clean)
        out.append(f"{label}: {len(sel)} cases; same outcome {same_outcome}/{len(sel)}; "
                   f"same jobs {same_jobs}/{len(clean)} of those both ended cleanly; "
                   f"jobs + schedule.csv + machine states all equal {all_same}/{len(clean)}")
        traces = [r["comparison"] for r in clean if "comparison" in r
                  and r["comparison"].get("identical_schedule_trace") is not None]
        out.append(f"{label}: schedule.trace byte for byte "
                   f"{sum(bool(c['identical_schedule_trace']) for c in traces)}/{len(traces)} "
                   "of those both ended cleanly (job colours masked: Batsim shuffles them "
                   "unseeded)")
        if pick:
            compared = [r["comparison"] for r in clean if "comparison" in r
                        and r["comparison"].get("same_energy") is not None]
            out.append(f"energy: {len(compared)} cases with energy outputs on both sides; "
                       "energy within 0.1 % (consumed_joules, jobs, every consumed_energy.csv "
                       f"row) {sum(bool(c['same_energy']) for c in compared)}/{len(compared)}; "
                       "consumed_joules to the printed digit "
                       f"{sum(bool(c['exact_energy']) for c in compared)}/{len(compared)}; "
                       "pstate_changes.csv identical "
                       f"{sum(bool(c['same_pstates']) for c in compared)}/{len(compared)}; "
                       "consumed_energy.csv byte for byte "
                       f"{sum(bool(c.get('identical_energy_csv')) for c in compared)}"
                       f"/{len(compared)}")
            states = [r["comparison"] for r in clean if "comparison" in r
                      and r["comparison"].get("identical_machine_states") is not None]
            out.append(f"energy: machine_states.csv byte for byte "
                       f"{sum(bool(c['identical_machine_states']) for c in states)}"
                       f"/{len(states)} of those both ended cleanly")
    return out


def save_table(path: Path, script: str, argv: list[str] | None, text: str) -> None:
    """Write ``text`` to ``path`` under a header naming the commit and the command."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=HERE).stdout.strip()
    args = " ".join(argv if argv is not None else sys.argv[1:])
    path.write_text(f"# commit {commit}; command: python bench/{script} {args}\n{text}")


def main(argv: list[str] | None = None) -> int:
    """Run the matrix and print (or save) the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batsim-prefix", type=Path, default=Path("/opt/batsim-4.2.1"))
    ap.add_argument("--archive", type=Path,
                    default=HERE.parents[2] / "shared" / "batsim" / "batsim-4.2.1.tar.gz")
    ap.add_argument("--match", default="", help="only cases whose test id contains this")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="cases run at once")
    ap.add_argument("--work", type=Path, default=None,
                    help="keep runs here (default: a temp dir, removed at the end)")
    ap.add_argument("--save", type=Path, help="write the table here, with the commit")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if not (args.batsim_prefix / "bin" / "batsim").is_file():
        log.error("real Batsim not built at %s", args.batsim_prefix)
        return 2
    if args.work is not None:
        return _run(args, argv, args.work)
    with tempfile.TemporaryDirectory(prefix="batsim-suite-") as work:  # gone afterwards
        return _run(args, argv, Path(work))


def _run(args: argparse.Namespace, argv: list[str] | None, work: Path) -> int:
    """Run the matrix's cases under ``work``; print (or save) the table."""
    test_dir = batsim_suite.batsim_test_dir(args.batsim_prefix, args.archive, work / "src")
    if test_dir is None:
        log.error("Batsim's test/ folder not found (build sources or %s)", args.archive)
        return 2
    cases = [c for c in batsim_suite.enumerate_cases(test_dir, work / "enum")
             if args.match in c.test]
    todo = [c for c in cases if c.why_not_applicable() is None]
    log.info("%d cases, %d applicable; runs under %s", len(cases), len(todo), work)
    done = 0

    def one(case):
        nonlocal done
        row = batsim_suite.case_result(case, work / "runs", batsim_prefix=args.batsim_prefix)
        done += 1
        log.info("[%d/%d] %s %s", done, len(todo), row.get("verdict", "-"), case.test)
        return row

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(one, todo))
    lines = [f"{'verdict':9} {'batsim':10} {'fake':40} test / first differences"]
    for r in sorted(rows, key=lambda r: r["test"]):
        lines.append(f"{r['verdict']:9} {r['batsim'][:10]:10} {r['fake'][:40]:40} {r['test']}")
        for d in r["diffs"][:3]:
            lines.append(f"{'':61}  {d}")
    lines += ["", *summary(rows)]
    text = "\n".join(lines) + "\n"
    if args.save:
        save_table(args.save, "batsim_testsuite.py", argv, text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
