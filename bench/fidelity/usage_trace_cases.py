"""usage_trace cases beyond Batsim's test suite: real Batsim vs fake-batsim, one table.

Issue 34 asks ``usage_trace`` profiles to give Batsim 4.2.1's outcome beyond its one
``test_usage_trace`` case. This crosses

- platforms: Batsim's ``small_platform_usage_replay.xml`` (4 hosts of 100 cores, two
  speeds, routes of up to 7 links with latencies), ``multicore16`` of
  ``bench/fidelity/energy_own_cases.py`` (16 four-core hosts, 10 µs links, sleep pstates) and
  Batsim's ``cluster_energy_128.xml`` (one-core hosts, 50 µs links);
- random usage traces (seeded, :func:`usage_workload`): 1 to 8 ranks per job (so several
  ranks on one host when a job has fewer machines), 1 to 12 ``m_usage`` lines per rank
  with usages 0, 1 or anything between, flops for 0.5 to 30 s; the trace files' quirks
  Batsim reads too (comments, blank lines, lines for another rank, a last line without
  a newline, which xbt's replay reader drops); some jobs with an
  ``smpi_ranks_to_hosts_mapping``, one profile in a sequence with a delay, delays and
  parallel tasks beside them, a few walltimes shorter than the run;
- batsched 1.4 variants: ``easy_bf`` with ``-E``, ``fcfs_fast`` without, and (on the
  platforms with sleep pstates) ``energy_bf_idle_sleeper`` as ``idle0`` of
  ``bench/fidelity/energy_own_cases.py``.

Each case runs batsched beside real Batsim and beside ``batpolicy fake-batsim`` with the
same command (``tests/batsim_suite.py``: same outcome, jobs, schedule.csv,
machine_states.csv and, with ``-E``, consumed_energy.csv and pstate_changes.csv).

    python bench/fidelity/usage_trace_cases.py -j 1 --work /tmp/ut \
        --save bench/results/usage_trace_cases.txt
"""

from __future__ import annotations

import json
import logging
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))
sys.path.insert(0, str(HERE))

from energy_own_cases import PLATFORMS as ENERGY_PLATFORMS  # noqa: E402
from energy_own_cases import VARIANTS as ENERGY_VARIANTS  # noqa: E402
from energy_own_cases import platform_file, run_matrix  # noqa: E402

import batsim_suite  # noqa: E402

log = logging.getLogger("usage_trace_cases")

_BATSIM = "/opt/batsim-4.2.1/src/batsim/platforms"
#: platform name -> (file or text, machines, flop/s of its slowest host, energy model or None)
PLATFORMS: dict[str, tuple[str, int, float, dict[str, float] | None]] = {
    "smallusage": (f"{_BATSIM}/small_platform_usage_replay.xml", 4, 50.0, None),
    "multicore16": (ENERGY_PLATFORMS["multicore16"][0], 16, 1e9,
                    ENERGY_PLATFORMS["multicore16"][2]),
    "cluster_energy_128": (ENERGY_PLATFORMS["cluster_energy_128"][0], 128, 1e8,
                           ENERGY_PLATFORMS["cluster_energy_128"][2]),
}
#: variant name -> (batsched variant, with -E)
VARIANTS: dict[str, tuple[str, bool]] = {
    "easy_bf-E": ("easy_bf", True),
    "fcfs_fast": ("fcfs_fast", False),
    "idle0-E": ("energy_bf_idle_sleeper", True),
}
SEEDS = (1, 2, 3)


def _rank_lines(rng: random.Random, rank: int, speed: float) -> str:
    """One rank's trace: m_usage lines with a few of the quirks Batsim's reader has."""
    lines = []
    if rng.random() < 0.3:
        lines.append("# usage trace of one rank")
    for _ in range(rng.randint(1, 12)):
        usage = rng.choice((0.0, 1.0, round(rng.random(), 2), round(rng.random(), 3)))
        flops = round(rng.uniform(0.5, 30.0) * speed, 3)
        sep = "\t" if rng.random() < 0.1 else " "
        lines.append(f"{rank}{sep}m_usage {usage} {flops}")
        if rng.random() < 0.1:
            lines.append("")
        if rng.random() < 0.05:
            lines.append(f"{rank + 1} m_usage 1 {flops}")  # another rank's: ignored
    text = "\n".join(lines)
    # a last line without newline is not replayed (ReplayReader::get)
    return text if rng.random() < 0.15 else text + "\n"


def usage_workload(seed: int, machines: int, speed: float, folder: Path,
                   jobs: int = 20) -> dict:
    """A Batsim JSON workload of usage traces (module docstring); traces under ``folder``."""
    rng = random.Random(seed)
    profiles: dict[str, dict] = {
        "d_short": {"type": "delay", "delay": 20},
        "cpu": {"type": "parallel_homogeneous", "cpu": 8 * speed, "com": 0},
    }
    nb_ranks = {}
    for p in range(5):
        name = f"ut{p}"
        ranks = rng.choice((1, 2, 3, 5, 8))
        nb_ranks[name] = ranks
        pdir = folder / name
        pdir.mkdir(parents=True, exist_ok=True)
        files = []
        for rank in range(ranks):
            (pdir / f"rank{rank}.txt").write_text(_rank_lines(rng, rank, speed))
            files.append(f"rank{rank}.txt")
        (pdir / "traces.txt").write_text("\n".join(files) + "\n")
        profiles[name] = {"type": "usage_trace",
                          "trace": f"{folder.name}/{name}/traces.txt"}
    profiles["ut_seq"] = {"type": "composed", "seq": ["ut0", "d_short"]}
    out, t = [], 0.0
    names = sorted(profiles)
    for i in range(jobs):
        t += rng.choice((0.0, 3.0, 20.0, 60.0))
        profile = rng.choice(names)
        res = rng.randint(1, max(1, min(4, machines // 2)))
        job = {"id": i, "subtime": round(t, 3), "res": res,
               "walltime": 15.0 if i % 7 == 6 else 5000.0, "profile": profile}
        if profile in nb_ranks and rng.random() < 0.3:
            job["smpi_ranks_to_hosts_mapping"] = [rng.randrange(res)
                                                  for _ in range(nb_ranks[profile])]
        out.append(job)
    return {"nb_res": machines, "jobs": out, "profiles": profiles}


def cases(work: Path) -> list[batsim_suite.Case]:
    """The matrix's cases, their inputs written under ``work``."""
    inputs = work / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    out = []
    for pname, (source, machines, speed, model) in PLATFORMS.items():
        platform = platform_file(source, inputs, pname)
        for seed in SEEDS:
            wpath = inputs / f"usage{seed}_{pname}.json"
            wpath.write_text(json.dumps(usage_workload(
                seed, machines, speed, inputs / f"traces{seed}_{pname}"), indent=1))
            for vname, (variant, energy) in VARIANTS.items():
                name = f"{vname}-{pname}-usage{seed}"
                sched = f"batsched -v {variant}"
                if variant == "energy_bf_idle_sleeper":
                    if model is None:
                        continue  # no sleep pstate to use
                    conf = inputs / f"{name}.json"
                    outdir = work / "sched" / name
                    outdir.mkdir(parents=True, exist_ok=True)
                    conf.write_text(json.dumps({
                        **model, "output_dir": str(outdir),
                        "trace_output_filename": str(outdir / "sched_trace.csv"),
                        **ENERGY_VARIANTS["idle0"][1]}))
                    sched += f" --variant_options_filepath {conf}"
                out.append(batsim_suite.Case(
                    test=f"usage_own::{name}", name=name,
                    batcmd=f"batsim -p {platform} -w {wpath} -e {work}/unused"
                           + (" -E" if energy else ""),
                    schedcmd=sched))
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the matrix and print (or save) the table."""
    return run_matrix(cases, "usage_trace_cases.py", argv,
                      "energy column: csv= consumed_energy.csv byte for byte; joules= "
                      "schedule.csv consumed_joules to the printed digit; 0.1% within 0.1 %; "
                      "- no energy (run without -E) or differing",
                      energy_summary_only=False, description=__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
