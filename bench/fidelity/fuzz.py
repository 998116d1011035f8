"""Differential fuzzer: generated cases on real Batsim 4.2.1 + batsched and on ``fake-batsim``.

For each seed, :func:`fuzz_cases.generate` draws a case (platform, workload, batsched
variant and options, Batsim flags); :func:`check` runs it

- on real Batsim (once, and where the sides differ a second time: a case where Batsim
  does not repeat itself is counted apart,
  never as a difference), cached by the case's hash under ``--cache`` (outside the
  tracked tree) so that a rerun only redoes our side;
- on ``batpolicy fake-batsim`` beside the same batsched;

and compares (:func:`compare`, ``tests/batsim_suite.py``'s rules and more): the outcome,
jobs.csv (state, allocation, success, start and finish within 1 µs), every column of
schedule.csv but the wall-clock ones (to the printed digit), machine_states.csv,
consumed_energy.csv and pstate_changes.csv, the Pajé trace (job colours masked). On a
difference the case is shrunk (``fuzz_shrink.py``) and the minimal reproducer saved
under ``--out`` with both sides' outputs, Batsim's conversation and the first differing
row.

    python bench/fidelity/fuzz.py --seeds 0:200 -j 2 [--cache DIR] [--out DIR] \
        [--save bench/results/fuzz.txt] [--no-shrink] [--max-minutes M]

Bounded by the count of seeds; ``--max-minutes`` stops early only when given.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "tests"))

import fuzz_cases  # noqa: E402
from fuzz_cases import FuzzCase  # noqa: E402
from log_to_transcript import convert  # noqa: E402

import batsim_suite  # noqa: E402

log = logging.getLogger("fuzz")

DEFAULT_CACHE = Path(os.environ.get("BATPOLICY_FUZZ_CACHE",
                                    Path.home() / ".cache" / "batpolicy-fuzz"))
#: schedule.csv columns that are wall-clock measurements or versions, never compared.
WALL_CLOCK = {"batsim_version", "scheduling_time", "simulation_time"}


@dataclass
class Verdict:
    """What one case gave."""

    key: str
    label: str
    verdict: str                 #: same / DIFF / batsim-unstable / both-fail
    diffs: list[str] = field(default_factory=list)
    energy: bool = False
    seconds: float = 0.0


# ---- the real-Batsim side, cached -------------------------------------------------------

def _run_meta(run: batsim_suite.Run) -> dict:
    return {"simulator_rc": run.simulator_rc, "scheduler_rc": run.scheduler_rc,
            "error": run.error, "seconds": run.seconds}


def _run_from(meta: dict, prefix: Path, side: str) -> batsim_suite.Run:
    run = batsim_suite.Run(side=side, prefix=prefix)
    run.simulator_rc, run.scheduler_rc = meta["simulator_rc"], meta["scheduler_rc"]
    run.error, run.seconds = meta["error"], meta["seconds"]
    return run


def real_side(case: FuzzCase, cache: Path, prefix: Path, *, twice: bool = True,
              timeout: float = 120.0) -> tuple[batsim_suite.Run, bool | None, list[str]]:
    """Real Batsim's run of ``case`` (from the cache when there): (run, repeats, why not).

    ``repeats`` is None when Batsim ran once only (``twice=False``, the shrinker's runs).
    """
    folder = cache / case.key()
    meta_path = folder / "meta.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        if meta["repeats"] is not None or not twice:
            return (_run_from(meta["run1"], folder / "run1" / "out", "batsim"),
                    meta["repeats"], meta["unstable"])
    suite = case.suite_case(folder / "inputs")
    (folder / "case.json").write_text(case.to_json())
    if meta_path.is_file():  # run once already: run it a second time only
        run1 = _run_from(json.loads(meta_path.read_text())["run1"], folder / "run1" / "out",
                         "batsim")
    else:
        shutil.rmtree(folder / "run1", ignore_errors=True)
        run1 = batsim_suite.run_case(suite, "batsim", folder / "run1", batsim_prefix=prefix,
                                     timeout=timeout)
    repeats, unstable = None, []
    if twice:
        run2 = batsim_suite.run_case(suite, "batsim", folder / "run2", batsim_prefix=prefix,
                                     timeout=timeout)
        unstable = compare(run1, run2)
        repeats = not unstable
        shutil.rmtree(folder / "run2", ignore_errors=True)
    meta_path.write_text(json.dumps({"run1": _run_meta(run1), "repeats": repeats,
                                     "unstable": unstable}, indent=1))
    return run1, repeats, unstable


def fake_side(case: FuzzCase, inputs_from: Path, work: Path, prefix: Path,
              timeout: float = 120.0) -> batsim_suite.Run:
    """``fake-batsim``'s run of ``case`` (inputs of the cache folder ``inputs_from``)."""
    if work.exists():
        shutil.rmtree(work)
    suite = case.suite_case(inputs_from / "inputs")
    return batsim_suite.run_case(suite, "fake", work, batsim_prefix=prefix, timeout=timeout)


# ---- comparing ----------------------------------------------------------------------------

def _schedule_row(prefix: Path) -> dict[str, str] | None:
    return batsim_suite.read_schedule(prefix)


def compare(real: batsim_suite.Run, fake: batsim_suite.Run) -> list[str]:
    """The differences of two runs (empty: the same); the first of each kind, Batsim's first.

    ``tests/batsim_suite.py``'s :func:`compare` plus every schedule.csv column but
    :data:`WALL_CLOCK` (as printed), the Pajé trace and consumed_joules to the printed digit.
    """
    c = batsim_suite.compare(real, fake)
    diffs = list(c.diffs)
    if not c.both_ok:
        return diffs if not c.same_outcome else []
    rs, fs = _schedule_row(real.prefix), _schedule_row(fake.prefix)
    if rs is not None and fs is not None:
        for col in sorted(set(rs) | set(fs)):
            if col in WALL_CLOCK or col in batsim_suite.SCHEDULE_COLUMNS:
                continue
            if rs.get(col) != fs.get(col):
                diffs.append(f"schedule {col}: {rs.get(col)} / {fs.get(col)}")
    if c.identical_machine_states is False and c.same_machine_states:
        pass  # the same rows up to 6 decimals: printed the same way by Batsim's %f
    return diffs


def first_rows(real: Path, fake: Path) -> list[str]:
    """The first differing row of each output file both sides wrote."""
    out = []
    for suffix in ("_jobs.csv", "_schedule.csv", "_machine_states.csv",
                   "_consumed_energy.csv", "_pstate_changes.csv", "_schedule.trace"):
        a, b = Path(f"{real}{suffix}"), Path(f"{fake}{suffix}")
        if not (a.is_file() and b.is_file()):
            continue
        la, lb = a.read_text().splitlines(), b.read_text().splitlines()
        if suffix == "_schedule.trace":
            la = batsim_suite.mask_colours("\n".join(la)).splitlines()
            lb = batsim_suite.mask_colours("\n".join(lb)).splitlines()
        if suffix == "_jobs.csv":  # rows in job order on both sides
            la, lb = la[:1] + sorted(la[1:]), lb[:1] + sorted(lb[1:])
        for i, (x, y) in enumerate(zip(la, lb, strict=False)):
            if x != y:
                out.append(f"{suffix[1:]} line {i + 1}:\n  batsim: {x}\n  fake:   {y}")
                break
        else:
            if len(la) != len(lb):
                out.append(f"{suffix[1:]}: {len(la)} / {len(lb)} lines")
    return out


# ---- one case -----------------------------------------------------------------------------

@dataclass
class Settings:
    """Where things go and how long they may take."""

    cache: Path
    out: Path
    prefix: Path
    shrink: bool = True
    timeout: float = 120.0


def differs(case: FuzzCase, s: Settings, *, twice: bool = True
            ) -> tuple[str, list[str]]:
    """Run ``case`` on both sides: (verdict, differences).

    Batsim runs once; where the sides differ and ``twice``, once more, and a Batsim that
    does not repeat itself makes the verdict ``batsim-unstable``, not a difference.
    """
    real, repeats, unstable = real_side(case, s.cache, s.prefix, twice=False,
                                        timeout=s.timeout)
    if repeats is False:
        return "batsim-unstable", unstable
    fake = fake_side(case, s.cache / case.key(), s.cache / case.key() / "fake", s.prefix,
                     timeout=s.timeout)
    diffs = compare(real, fake)
    if diffs and twice and repeats is None:
        real, repeats, unstable = real_side(case, s.cache, s.prefix, twice=True,
                                            timeout=s.timeout)
        if repeats is False:
            return "batsim-unstable", unstable
    if diffs:
        return "DIFF", diffs
    return ("same" if real.ok else "both-fail"), []


def check(case: FuzzCase, s: Settings) -> Verdict:
    """Run, compare, and on a difference shrink and save the reproducer."""
    began = time.perf_counter()
    verdict, diffs = differs(case, s)
    v = Verdict(case.key(), case.label, verdict, diffs, case.is_energy)
    if verdict == "DIFF":
        minimal = case
        if s.shrink:
            import fuzz_shrink
            minimal = fuzz_shrink.shrink(case, lambda c: differs(c, s, twice=False)[0]
                                         == "DIFF")
            minimal_verdict, minimal_diffs = differs(minimal, s)  # twice: Batsim repeats?
            if minimal_verdict == "DIFF":
                diffs = minimal_diffs
            else:
                minimal = case
        save_reproducer(case, minimal, diffs, s)
        v.diffs = diffs
    v.seconds = time.perf_counter() - began
    return v


def save_reproducer(case: FuzzCase, minimal: FuzzCase, diffs: list[str], s: Settings
                    ) -> Path:
    """``out/<label>/``: the minimal case, both sides' outputs, the conversation, the rows."""
    folder = s.out / case.label
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "case.json").write_text(case.to_json())
    (folder / "minimal.json").write_text(minimal.to_json())
    src = s.cache / minimal.key()
    shutil.copytree(src / "inputs", folder / "inputs")
    shutil.copytree(src / "run1", folder / "batsim")
    shutil.copytree(src / "fake", folder / "fake")
    log_lines = (src / "run1" / "simulator.log").read_text(errors="replace").splitlines()
    (folder / "conversation.jsonl").write_text("\n".join(convert(log_lines)) + "\n")
    rows = first_rows(folder / "batsim" / "out", folder / "fake" / "out")
    (folder / "diff.txt").write_text(
        f"case {case.label} ({case.key()}), minimal {minimal.key()}: "
        f"{len(minimal.workload['jobs'])} of {len(case.workload['jobs'])} jobs\n"
        + "".join(f"{d}\n" for d in diffs) + "\n" + "\n".join(rows) + "\n")
    return folder


# ---- the command --------------------------------------------------------------------------

def _seeds(text: str) -> range:
    lo, _, hi = text.partition(":")
    return range(int(lo), int(hi)) if hi else range(int(lo), int(lo) + 1)


def main(argv: list[str] | None = None) -> int:
    """Fuzz the seeds given; print progress, then the summary (saved with ``--save``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0:50", help="LO:HI, the seeds run (HI excluded)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="cases at once")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                    help="real Batsim's runs by case hash (default $BATPOLICY_FUZZ_CACHE "
                         "or ~/.cache/batpolicy-fuzz)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/batpolicy-fuzz-out"),
                    help="minimal reproducers go here")
    ap.add_argument("--batsim-prefix", type=Path, default=Path("/opt/batsim-4.2.1"))
    ap.add_argument("--max-jobs", type=int, default=16)
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--max-minutes", type=float, help="stop starting cases after this")
    ap.add_argument("--save", type=Path, help="write the summary here, with the commit")
    ap.add_argument("--log", type=Path, help="one JSON line per case appended here")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if not (args.batsim_prefix / "bin" / "batsim").is_file():
        log.error("real Batsim not built at %s", args.batsim_prefix)
        return 2
    args.cache.mkdir(parents=True, exist_ok=True)
    s = Settings(args.cache, args.out, args.batsim_prefix, shrink=not args.no_shrink)
    seeds = _seeds(args.seeds)
    deadline = time.monotonic() + 60 * args.max_minutes if args.max_minutes else None
    results: list[Verdict] = []
    lock = threading.Lock()

    def one(seed: int) -> Verdict | None:
        if deadline is not None and time.monotonic() > deadline:
            return None
        try:
            case = fuzz_cases.generate(seed, max_jobs=args.max_jobs)
            v = check(case, s)
        except Exception as exc:  # noqa: BLE001 - one broken case is reported, not fatal
            log.exception("seed %d", seed)
            v = Verdict("", f"s{seed}", "ERROR", [repr(exc)])
        with lock:
            results.append(v)
            log.info("[%d/%d] %-15s %5.1fs %s %s", len(results), len(seeds), v.verdict,
                     v.seconds, v.label, "; ".join(v.diffs[:2]))
            if args.log:
                with args.log.open("a") as f:
                    f.write(json.dumps(v.__dict__) + "\n")
        return v

    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(one, seeds))
    text = summary(results, args.seeds)
    sys.stdout.write(text)
    if args.save:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=HERE).stdout.strip()
        args.save.write_text(f"# commit {commit}; command: python bench/fidelity/fuzz.py "
                             f"{' '.join(argv if argv is not None else sys.argv[1:])}\n"
                             + text)
    return 0


#: The vendored reproducers (``fuzz_vendor.py``), whose case.json names the seed that found
#: them and, for a difference not fixed yet, its cause (``known_difference``).
REPRODUCERS = HERE.parents[1] / "tests" / "data" / "fuzz"


def known_differences(folder: Path = REPRODUCERS) -> dict[int, tuple[str, str]]:
    """Seed -> (reproducer, cause) of each known difference not fixed yet.

    A reproducer's case.json gives ``seed`` and, for seeds found later to show the same
    cause, ``alike_seeds`` (checked by hand when they were listed: the seed's case, not
    this run, is what is known).
    """
    known: dict[int, tuple[str, str]] = {}
    for case in sorted(folder.glob("*/case.json")):
        meta = json.loads(case.read_text())
        cause = meta.get("known_difference")
        if cause:
            for seed in [meta.get("seed"), *meta.get("alike_seeds", [])]:
                if isinstance(seed, int):
                    known[seed] = (case.parent.name, cause)
    return known


def summary(results: list[Verdict], seeds: str) -> str:
    """Counts per verdict and the differing cases, each with its known cause if listed."""
    count: dict[str, int] = {}
    for v in results:
        count[v.verdict] = count.get(v.verdict, 0) + 1
    stable = [v for v in results if v.verdict not in ("batsim-unstable", "ERROR")]
    same = sum(v.verdict in ("same", "both-fail") for v in stable)
    lines = [f"seeds {seeds}: {len(results)} cases; "
             + ", ".join(f"{k} {n}" for k, n in sorted(count.items())),
             f"identical where Batsim repeats itself: {same}/{len(stable)} "
             f"({100 * same / max(len(stable), 1):.2f} %)", ""]
    known = known_differences()
    listed = 0
    for v in sorted(results, key=lambda v: v.label):
        if v.verdict not in ("same", "both-fail"):
            lines.append(f"{v.verdict:15} {v.label} ({v.key})")
            lines += [f"    {d}" for d in v.diffs[:4]]
            seed = v.label[1:].partition("-")[0]
            if v.verdict == "DIFF" and seed.isdigit() and int(seed) in known:
                listed += 1
                name, cause = known[int(seed)]
                lines.append(f"    known difference, tests/data/fuzz/{name}: {cause}")
    if listed:
        lines[2:2] = [f"DIFF with a known cause (tests/data/fuzz/README.md): {listed}", ""]
    return "\n".join(lines) + "\n"


def read_csv(path: Path) -> list[dict[str, str]]:
    """Rows of a CSV file (for tests reading saved reproducers)."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


if __name__ == "__main__":
    sys.exit(main())
