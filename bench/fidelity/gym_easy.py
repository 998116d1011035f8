"""How far ``batpolicy.gym.baselines.easy`` is from ``batpolicy simulate --policy easy``, and why.

Usage: ``python bench/fidelity/gym_easy.py [TRACE ...] [-p PLATFORM] [--max-jobs N] [--window W]``
(default: whole KTH-SP2-1996-2 from the shared data folder, else the bundled 4-week
excerpt). For each input: the jobs of the environment's episode (the EASY baseline)
that start when ``--policy easy`` starts them, and on the same machines; then the first
decision where the two jobs.csv differ, with the machines free just before it.

The environment places each job an action starts on the lowest free machine ids, so at
every instant the jobs it starts hold, together, the lowest free ids (a prefix of the
free set). ``--policy easy`` (batsched's easy_bf) puts a backfilled job that ends after
the head's shadow time on the lowest *unreserved* ids, leaving lower reserved machines
idle: where that happens, no sequence of actions gives its jobs.csv
(tests/gym/test_easy_baseline.py searches every sequence on a 5-job reproducer). This
script checks that the first difference on each input is such a placement, and not a
different decision (a job started at another time), and that the baseline's jobs.csv is,
byte for byte, that of ``--policy easy --param backfill_on=lowest`` (EASY backfilling on
the lowest free ids, the placement an action gives).
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium

import batpolicy.gym  # noqa: F401 - registers the environment
from batpolicy.app.cli import main as cli
from batpolicy.gym import baselines
from batpolicy.io.inputs import bundled
from batpolicy.protocol.intervals import MachineSet

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import header  # noqa: E402  (bench/harness.py)

FULL_KTH = Path("/work/shared/data/traces/KTH-SP2-1996-2.swf.gz")

Row = dict[str, str]


def read_jobs(path: Path) -> dict[str, Row]:
    """jobs.csv's rows by job id."""
    with path.open(newline="") as f:
        return {row["job_id"]: row for row in csv.DictReader(f)}


def free_before(rows: dict[str, Row], t: float, nb_machines: int) -> MachineSet:
    """Machines no job holds just before the decisions at ``t`` (jobs ending at ``t`` released)."""
    busy = MachineSet()
    for row in rows.values():
        start, finish = float(row["starting_time"]), float(row["finish_time"])
        if row["allocated_resources"] and start < t < finish:
            busy = busy | MachineSet.parse(row["allocated_resources"])
    return MachineSet.parse(f"0-{nb_machines - 1}") - busy


def episode(trace: Path, platform: Path | None, max_jobs: int | None, window: int,
            out: Path) -> tuple[int, int]:
    """Run the EASY baseline's episode into ``out``; (machines, longest queue seen)."""
    env = gymnasium.make("batpolicy/Scheduling-v0", workload=trace, platform=platform,
                         max_jobs=max_jobs, window=window, output_dir=out)
    obs, info = env.reset(seed=0)
    longest = 0
    while True:
        longest = max(longest, int(obs["cluster"][2]))
        obs, _, terminated, _, info = env.step(baselines.easy(obs, info))
        if terminated:
            break
    nb_machines = env.unwrapped.nb_machines
    env.close()
    return nb_machines, longest


@dataclass
class Comparison:
    """The two jobs.csv of one input and their first difference."""

    name: str
    window: int
    longest_queue: int
    identical: bool
    sim: dict[str, Row]
    gym: dict[str, Row]
    first: float | None = None  # time of the first decision where they differ
    free: MachineSet = field(default_factory=MachineSet)  # free just before it
    differing: list[str] = field(default_factory=list)  # jobs differing at ``first``
    easy_machines: MachineSet = field(default_factory=MachineSet)  # easy's starts there
    lowest_identical: bool = False  # the baseline's jobs.csv = backfill_on=lowest's

    @property
    def placement_only(self) -> bool:
        """Identical, or first differing in machines that no action sequence can choose.

        The same jobs start at that time in both, and easy's starts then do not hold the
        lowest free ids (the environment's jobs always do).
        """
        if self.identical:
            return True
        lowest = self.free.lowest(len(self.easy_machines))
        return self.easy_machines != lowest and all(
            self.sim[k]["starting_time"] == self.gym[k]["starting_time"]
            for k in self.differing)


def compare(trace: Path, platform: Path | None, max_jobs: int | None, window: int,
            tmp: Path) -> Comparison:
    """Run ``simulate --policy easy`` and the baseline's episode on one input; compare."""
    args = ["-w", str(trace), *(["-p", str(platform)] if platform else []),
            *(["--max-jobs", str(max_jobs)] if max_jobs else [])]
    if cli(["simulate", "--policy", "easy", *args, "-o", str(tmp / "sim"), "-q",
            "--no-progress"]) != 0:
        raise RuntimeError(f"{trace}: simulate --policy easy failed")
    if cli(["simulate", "--policy", "easy", "--param", "backfill_on=lowest", *args, "-o",
            str(tmp / "lowest"), "-q", "--no-progress"]) != 0:
        raise RuntimeError(f"{trace}: simulate --policy easy --param backfill_on=lowest failed")
    nb_machines, longest = episode(trace, platform, max_jobs, window, tmp / "gym")
    sim, gym = read_jobs(tmp / "sim" / "jobs.csv"), read_jobs(tmp / "gym" / "jobs.csv")
    gym_bytes = (tmp / "gym" / "jobs.csv").read_bytes()
    identical = (tmp / "sim" / "jobs.csv").read_bytes() == gym_bytes
    name = trace.name + (f" (first {max_jobs} jobs)" if max_jobs else "")
    result = Comparison(name, window, longest, identical, sim, gym)
    result.lowest_identical = (tmp / "lowest" / "jobs.csv").read_bytes() == gym_bytes
    differ = [k for k in sim if sim[k] != gym[k]]
    if not differ:
        return result
    t = min(min(float(sim[k]["starting_time"]), float(gym[k]["starting_time"])) for k in differ)
    result.first = t
    result.differing = sorted(k for k in differ if t in (float(sim[k]["starting_time"]),
                                                         float(gym[k]["starting_time"])))
    result.free = free_before(sim, t, nb_machines)
    result.easy_machines = MachineSet().union(*(
        MachineSet.parse(row["allocated_resources"]) for row in sim.values()
        if float(row["starting_time"]) == t))
    return result


def report(c: Comparison) -> list[str]:
    """Report lines for one comparison."""
    sim, gym, n = c.sim, c.gym, len(c.sim)
    same_time = [k for k in sim if sim[k]["starting_time"] == gym[k]["starting_time"]]
    same_both = [k for k in same_time
                 if sim[k]["allocated_resources"] == gym[k]["allocated_resources"]]
    held = "the window held it" if c.longest_queue <= c.window else "TRUNCATED"
    lines = [f"{c.name}: {n} jobs, window {c.window} (longest queue {c.longest_queue}, "
             f"{held}), jobs.csv identical: {c.identical}; identical to "
             f"--param backfill_on=lowest's: {c.lowest_identical}",
             f"  same start time: {len(same_time)} ({100 * len(same_time) / n:.1f} %); "
             f"same start and machines: {len(same_both)} ({100 * len(same_both) / n:.1f} %)"]
    if c.first is None:
        return lines
    lines.append(f"  first difference at t = {c.first:.0f}: free before it {c.free}")
    for k in c.differing:
        lines.append(f"    job {k} ({sim[k]['requested_number_of_resources']} machines, "
                     f"walltime {float(sim[k]['requested_time']):.0f} s): easy starts it at "
                     f"{float(sim[k]['starting_time']):.0f} on {sim[k]['allocated_resources']}"
                     f", the baseline at {float(gym[k]['starting_time']):.0f} on "
                     f"{gym[k]['allocated_resources']}")
    lines.append(f"  easy's starts at t hold {c.easy_machines} -> "
                 + ("a placement no action sequence can give (not the lowest free ids)"
                    if c.placement_only else "a DIFFERENT DECISION (not explained by placement)"))
    return lines


def main(argv: list[str] | None = None) -> int:
    """Compare each input and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("-p", "--platform", type=Path, default=None)
    parser.add_argument("--max-jobs", type=int, default=None)
    parser.add_argument("--window", type=int, default=2000,
                        help="jobs observed (the baseline backfills only from the window)")
    args = parser.parse_args(argv)
    traces = args.traces or [FULL_KTH if FULL_KTH.is_file()
                             else bundled("KTH-SP2-1996-2-4weeks.swf.gz")]
    print(header())
    print("# python bench/fidelity/gym_easy.py " + " ".join(sys.argv[1:] if argv is None else argv))
    ok = True
    for trace in traces:
        with tempfile.TemporaryDirectory() as tmp:
            comparison = compare(trace, args.platform, args.max_jobs, args.window, Path(tmp))
        ok &= comparison.placement_only and comparison.lowest_identical
        print("\n".join(report(comparison)), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
