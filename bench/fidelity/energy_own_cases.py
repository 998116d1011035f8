"""Energy cases of our own, beyond Batsim's test suite: real Batsim vs fake-batsim, one table.

Issue 34 asks energy to match Batsim 4.2.1 with ``-E`` on more than Batsim's own energy
tests. This crosses

- platforms: Batsim's ``cluster_energy_128.xml`` (50 µs links, Grid'5000 power
  figures), our ``bench/campaigns/inputs/energy128.xml`` (zero latency), and two written
  here: ``multicore16`` (16 four-core hosts on 10 µs links, ``idle:epsilon:all_cores``
  wattages, two computation pstates) and ``twosleep8`` (8 hosts with two sleep pstates,
  each with its own switch-off and switch-on pstates, 2-number wattages);
- random workloads (seeded, :func:`random_workload`): delays, parallel tasks with and
  without communication, sequences mixing both, a few jobs killed at their walltime,
  arrivals with gaps long enough for machines to sleep;
- batsched 1.4 energy variants: ``energy_bf_idle_sleeper`` with three sets of variant
  options (written as Batsim's ``test/test_energy.py`` writes them: its energy model
  instance plus the variant's parameters) and ``sleeper``.

Each case runs batsched beside real Batsim and beside ``batpolicy fake-batsim`` with the
same command (``tests/batsim_suite.py``: same outcome, jobs, schedule.csv,
machine_states.csv, consumed_energy.csv, pstate_changes.csv).

    python bench/fidelity/energy_own_cases.py -j 1 --work /tmp/own \
        --save bench/results/energy_own_cases.txt
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))
sys.path.insert(0, str(HERE))

from batsim_testsuite import save_table, summary  # noqa: E402

import batsim_suite  # noqa: E402

log = logging.getLogger("energy_own_cases")

_MULTICORE = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="AS0" routing="Full">
  <cluster id="c" prefix="host" suffix="" radical="0-15" bw="1.25GBps" lat="10us"
           bb_bw="10GBps" bb_lat="10us" core="4"
           speed="1Gf, 0.6Gf, 1e-9f, 0.2f, 0.05f">
    <prop id="wattage_per_state" value="100:120:220, 90:105:160, 8:8, 140:140, 150:150"/>
    <prop id="wattage_off" value="8"/>
    <prop id="sleep_pstates" value="2:3:4"/>
  </cluster>
  <cluster id="m" prefix="master_host" suffix="" radical="0-0" bw="1.25GBps" lat="10us"
           speed="1Gf"><prop id="role" value="master"/></cluster>
  <link id="backbone" bandwidth="10GBps" latency="10us"/>
  <zoneRoute src="c" dst="m" gw_src="hostc_router" gw_dst="master_hostm_router">
    <link_ctn id="backbone"/>
  </zoneRoute>
</zone>
</platform>
"""

_TWOSLEEP = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="AS0" routing="Full">
  <cluster id="c" prefix="host" suffix="" radical="0-7" bw="125MBps" lat="50us"
           bb_bw="2.25GBps" bb_lat="500us"
           speed="200Mf, 1e-9f, 1e-9f, 0.25f, 0.02f, 0.5f, 0.1f">
    <prop id="wattage_per_state" value="80:200, 20:20, 5:5, 110:110, 120:120, 90:90, 100:100"/>
    <prop id="wattage_off" value="5"/>
    <prop id="sleep_pstates" value="1:5:6, 2:3:4"/>
  </cluster>
  <cluster id="m" prefix="master_host" suffix="" radical="0-0" bw="125MBps" lat="50us"
           speed="100Mf"><prop id="role" value="master"/></cluster>
  <link id="backbone" bandwidth="2.25GBps" latency="500us"/>
  <zoneRoute src="c" dst="m" gw_src="hostc_router" gw_dst="master_hostm_router">
    <link_ctn id="backbone"/>
  </zoneRoute>
</zone>
</platform>
"""

#: platform name -> (file or text, machines, batsched's energy model of it)
PLATFORMS: dict[str, tuple[str, int, dict[str, float]]] = {
    "cluster_energy_128": ("/opt/batsim-4.2.1/src/batsim/platforms/cluster_energy_128.xml", 128,
                           {"power_sleep": 9.75, "power_idle": 95, "energy_switch_on": 19030,
                            "power_compute": 190.738, "energy_switch_off": 620,
                            "time_switch_off": 6.1, "pstate_sleep": 13, "pstate_compute": 0,
                            "time_switch_on": 152}),
    "energy128": (str(HERE / "campaigns" / "inputs" / "energy128.xml"), 128,
                  {"power_sleep": 9.75, "power_idle": 95, "energy_switch_on": 19030,
                   "power_compute": 190.738, "energy_switch_off": 620, "time_switch_off": 6.1,
                   "pstate_sleep": 1, "pstate_compute": 0, "time_switch_on": 152}),
    "multicore16": (_MULTICORE, 16,
                    {"power_sleep": 8, "power_idle": 100, "energy_switch_on": 3000,
                     "power_compute": 220, "energy_switch_off": 700, "time_switch_off": 5,
                     "pstate_sleep": 2, "pstate_compute": 0, "time_switch_on": 20}),
    "twosleep8": (_TWOSLEEP, 8,
                  {"power_sleep": 5, "power_idle": 80, "energy_switch_on": 6000,
                   "power_compute": 200, "energy_switch_off": 440, "time_switch_off": 4,
                   "pstate_sleep": 2, "pstate_compute": 0, "time_switch_on": 50}),
}

#: variant name -> (batsched variant, its parameters beside the energy model)
VARIANTS: dict[str, tuple[str, dict[str, object]]] = {
    "idle0": ("energy_bf_idle_sleeper", {
        "monitoring_period": 30, "idle_time_to_sedate": 0,
        "sedate_idle_on_classical_events": False, "ensured_sleep_time_lower_bound": 0,
        "ensured_sleep_time_upper_bound": 0}),
    "idle120": ("energy_bf_idle_sleeper", {
        "monitoring_period": 60, "idle_time_to_sedate": 120,
        "sedate_idle_on_classical_events": True, "ensured_sleep_time_lower_bound": 0,
        "ensured_sleep_time_upper_bound": 0}),
    "idle30fast": ("energy_bf_idle_sleeper", {
        "monitoring_period": 10, "idle_time_to_sedate": 30,
        "sedate_idle_on_classical_events": False, "ensured_sleep_time_lower_bound": 0,
        "ensured_sleep_time_upper_bound": 0}),
    "sleeper": ("sleeper", {}),
}
SEEDS = (1, 2, 3)


def random_workload(seed: int, machines: int, jobs: int = 24) -> dict:
    """A Batsim JSON workload: bursts separated by idle gaps, a mix of profile types.

    Jobs use at most a quarter of the machines each; one in eight has a walltime shorter
    than its run (killed at the walltime).
    """
    rng = random.Random(seed)
    speed_hint = 1e8  # flop/s of the slowest platform's computation pstate 0
    profiles = {
        "d_short": {"type": "delay", "delay": 20},
        "d_long": {"type": "delay", "delay": 150},
        "cpu": {"type": "parallel_homogeneous", "cpu": 30 * speed_hint, "com": 0},
        "cpu_com": {"type": "parallel_homogeneous", "cpu": 10 * speed_hint, "com": 5e7},
        "total": {"type": "parallel_homogeneous_total", "cpu": 60 * speed_hint, "com": 1e8},
        "seq": {"type": "composed", "repeat": 2, "seq": ["cpu_com", "d_short"]},
    }
    out, t = [], 0.0
    for i in range(jobs):
        t += rng.choice((0.0, 5.0, 30.0, 400.0 if i % 6 == 5 else 60.0))
        profile = rng.choice(sorted(profiles))
        res = rng.randint(1, max(1, machines // 4))
        walltime = 30.0 if i % 8 == 7 else 2000.0
        out.append({"id": i, "subtime": round(t, 3), "res": res, "walltime": walltime,
                    "profile": profile})
    return {"nb_res": machines, "jobs": out, "profiles": profiles}


def platform_file(source: str, inputs: Path, name: str) -> Path:
    """The platform's file: ``source`` itself, or that XML text written as ``name``.xml."""
    if not source.lstrip().startswith("<?xml"):
        return Path(source)
    path = inputs / f"{name}.xml"
    path.write_text(source)
    return path


def cases(work: Path) -> list[batsim_suite.Case]:
    """The matrix's cases, their inputs written under ``work``."""
    inputs = work / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    out = []
    for pname, (source, machines, model) in PLATFORMS.items():
        platform = platform_file(source, inputs, pname)
        for seed in SEEDS:
            wpath = inputs / f"random{seed}_{machines}.json"
            wpath.write_text(json.dumps(random_workload(seed, machines), indent=1))
            for vname, (variant, params) in VARIANTS.items():
                name = f"{vname}-{pname}-random{seed}"
                conf = inputs / f"{name}.json"
                outdir = work / "sched" / name
                outdir.mkdir(parents=True, exist_ok=True)
                conf.write_text(json.dumps({**model, "output_dir": str(outdir),
                                            "trace_output_filename":
                                                str(outdir / "sched_trace.csv"), **params}))
                out.append(batsim_suite.Case(
                    test=f"energy_own::{name}", name=name,
                    batcmd=f"batsim -p {platform} -w {wpath} -e {work}/unused -E",
                    schedcmd=f"batsched -v {variant} --variant_options_filepath {conf}"))
    return out


def run_matrix(make_cases: Callable[[Path], list[batsim_suite.Case]], script: str,
               argv: list[str] | None, note: str, energy_summary_only: bool,
               description: str) -> int:
    """Run Batsim and fake-batsim on ``make_cases(work)``; print (or save) the table.

    Shared by this script and ``usage_trace_cases.py``: the command line, the runs (``-j``
    at once), one row per case with its energy column, ``note`` under the table, then
    the summary (its energy lines only if ``energy_summary_only``).
    """
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--batsim-prefix", type=Path, default=Path("/opt/batsim-4.2.1"))
    ap.add_argument("--match", default="", help="only cases whose name contains this")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="cases run at once")
    ap.add_argument("--work", type=Path, required=True, help="inputs and runs go here")
    ap.add_argument("--save", type=Path, help="write the table here, with the commit")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if not (args.batsim_prefix / "bin" / "batsim").is_file():
        log.error("real Batsim not built at %s", args.batsim_prefix)
        return 2
    todo = [c for c in make_cases(args.work) if args.match in c.name]
    done = 0

    def one(case: batsim_suite.Case) -> dict:
        nonlocal done
        row = batsim_suite.case_result(case, args.work / "runs",
                                       batsim_prefix=args.batsim_prefix)
        done += 1
        log.info("[%d/%d] %s %s", done, len(todo), row.get("verdict", "-"), case.name)
        return row

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(one, todo))
    lines = [f"{'verdict':9} {'batsim':10} {'fake':30} {'energy':13} case / first differences"]
    for r in sorted(rows, key=lambda r: r["test"]):
        c = r.get("comparison", {})
        exact = ("csv=" if c.get("identical_energy_csv") else
                 "joules=" if c.get("exact_energy") else
                 "0.1%" if c.get("same_energy") else "-")
        lines.append(f"{r['verdict']:9} {r['batsim'][:10]:10} {r['fake'][:30]:30} "
                     f"{exact:13} {r['name']}")
        for d in r["diffs"][:3]:
            lines.append(f"{'':66}  {d}")
    lines += ["", note, "", *[s for s in summary(rows)
                              if not energy_summary_only or s.startswith("energy")]]
    text = "\n".join(lines) + "\n"
    if args.save:
        save_table(args.save, script, argv, text)
    sys.stdout.write(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the matrix and print (or save) the table."""
    return run_matrix(cases, "energy_own_cases.py", argv,
                      "energy column: csv= consumed_energy.csv byte for byte; joules= "
                      "schedule.csv consumed_joules to the printed digit; 0.1% within 0.1 %",
                      energy_summary_only=True, description=__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
