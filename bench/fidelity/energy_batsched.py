"""batsched's ``energy_bf_idle_sleeper`` in real Batsim 4.2.1 -E on the energy trade-off's inputs.

The reference beside ``bench/campaigns/energy_tradeoff.toml`` (docs/energy.md): the same
traces, read as the campaign reads them (``batpolicy workload transform --lenient``: SWF
jobs as delay profiles), the same generated ``--power`` platforms, real Batsim with
``-E``, and batsched 1.4's idle sleeper with the variant options Batsim's
``test/test_energy.py`` writes (``energy_model_instance()`` and test_energy_minimal's
``monitoring_period`` 30, ``sedate_idle_on_classical_events`` false, ensured sleep time
bounds 0), but for ``pstate_sleep`` (1 on our platforms, 13 on Batsim's 16-pstate ones)
and ``idle_time_to_sedate``, the tau of each row. One row per (trace, tau), with the
campaign table's column names: mean bounded slowdown from Batsim's ``jobs.csv`` by our
metrics code (tau_bsld = 10 s, rejected jobs in no mean), Batsim's ``schedule.csv``
energy totals.

    python bench/fidelity/energy_batsched.py -o bench/campaigns/results/energy_tradeoff/batsched.csv

Needs Batsim and batsched (``$BATSIM``, ``$BATSCHED``, default /opt/batsim-4.2.1/bin)
and ``../shared``. Runs one simulation at a time; progress on stderr. With ``--keep DIR``
a case already finished in DIR is read back: cases may run in several invocations (in
parallel) and a last one with every ``--tau`` writes the whole table.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from batpolicy.scheduler.outcomes import JobOutcome, compute_metrics

log = logging.getLogger("energy_batsched")

ROOT = Path(__file__).resolve().parents[2]
BIN = Path("/opt/batsim-4.2.1/bin")
BATSIM = Path(os.environ.get("BATSIM", BIN / "batsim"))
BATSCHED = Path(os.environ.get("BATSCHED", BIN / "batsched"))
TRACES = ROOT.parent / "shared" / "data" / "traces"
INPUTS = ROOT / "bench" / "campaigns" / "inputs"
#: trace -> the campaign's platform for it
CASES = {"KTH-SP2-1996-2.swf.gz": "power_100.xml",
         "HPC2N-2002-2.2-excerpt-alea.swf": "power_240.xml"}
TAUS = (0, 60, 300, 1800, 3600)
#: Batsim 4.2.1 test/test_energy.py, energy_model_instance(), pstate_sleep excepted
ENERGY_MODEL = {"power_sleep": 9.75, "power_idle": 95, "energy_switch_on": 19030,
                "power_compute": 190.738, "energy_switch_off": 620, "time_switch_off": 6.1,
                "pstate_sleep": 1, "pstate_compute": 0, "time_switch_on": 152}
#: test_energy_minimal's additional options, idle_time_to_sedate set per row
MINIMAL = {"monitoring_period": 30, "sedate_idle_on_classical_events": False,
           "ensured_sleep_time_lower_bound": 0, "ensured_sleep_time_upper_bound": 0}
ENERGY_COLUMNS = ("consumed_joules", "nb_machine_switches", "nb_grouped_switches",
                  "time_computing", "time_idle", "time_sleeping", "time_switching_off",
                  "time_switching_on")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def to_json(trace: Path, nb_res: int, out: Path) -> Path:
    """The trace as the campaign reads it (lenient), as a Batsim JSON workload."""
    subprocess.run([sys.executable, "-m", "batpolicy", "workload", "transform", str(trace),
                    "--lenient", "--nb-res", str(nb_res), "-o", str(out)], check=True)
    return out


def run_case(workload: Path, platform: Path, tau: float, folder: Path,
             timeout_s: float) -> tuple[dict[str, Any], float]:
    """Batsim -E beside the idle sleeper with ``idle_time_to_sedate = tau``; (row, wall)."""
    if (folder / "out_schedule.csv").is_file() and (folder / "wall.txt").is_file():
        log.info("%s: finished before, reused (--keep)", folder.name)
        return _row(folder / "out"), float((folder / "wall.txt").read_text())
    folder.mkdir(parents=True, exist_ok=True)
    options = {**ENERGY_MODEL, **MINIMAL, "idle_time_to_sedate": tau,
               "output_dir": str(folder), "trace_output_filename": str(folder / "sched.csv")}
    (folder / "options.json").write_text(json.dumps(options, indent=2))
    endpoint = f"tcp://127.0.0.1:{_free_port()}"
    began = time.perf_counter()
    sched = subprocess.Popen([str(BATSCHED), "-v", "energy_bf_idle_sleeper", "--verbosity", "quiet",
                              "--variant_options_filepath", str(folder / "options.json"),
                              "-s", endpoint], stdout=subprocess.DEVNULL,
                             stderr=(folder / "batsched.log").open("w"))
    try:
        batsim = subprocess.run([str(BATSIM), "-p", str(platform), "-w", str(workload), "-E",
                                 "-e", str(folder / "out"), "-s", endpoint, "-q"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                timeout=timeout_s)
        sched.wait(timeout=60)
    finally:
        if sched.poll() is None:
            sched.kill()
    wall = time.perf_counter() - began
    if batsim.returncode != 0:
        raise RuntimeError(f"Batsim exited {batsim.returncode}: {batsim.stderr[-500:]}")
    (folder / "wall.txt").write_text(f"{wall:.1f}\n")
    return _row(folder / "out"), wall


def _row(prefix: Path) -> dict[str, Any]:
    """Our metrics of Batsim's ``jobs.csv`` and its ``schedule.csv`` energy totals."""
    outcomes = []
    with open(f"{prefix}_jobs.csv", newline="") as f:
        for job in csv.DictReader(f):
            ran = job["final_state"] != "REJECTED"
            outcomes.append(JobOutcome(
                float(job["submission_time"]),
                float(job["starting_time"]) if ran else None,
                float(job["finish_time"]) if ran else None,
                int(job["requested_number_of_resources"]), job["success"] == "1",
                job["final_state"] in ("COMPLETED_KILLED", "COMPLETED_WALLTIME_REACHED")))
    with open(f"{prefix}_schedule.csv", newline="") as f:
        schedule = next(csv.DictReader(f))
    metrics = compute_metrics(outcomes, nb_machines=int(schedule["nb_computing_machines"]),
                              tau=10.0)
    row: dict[str, Any] = {k: metrics[k] for k in (
        "mean_bounded_slowdown", "max_bounded_slowdown", "mean_waiting_time",
        "mean_turnaround_time", "nb_jobs", "nb_jobs_rejected", "nb_jobs_success",
        "nb_jobs_killed", "utilization", "makespan")}
    for key in ENERGY_COLUMNS:
        value = float(schedule[key])
        row[key] = int(value) if key.startswith("nb_") else value
    row["batsim_version"] = schedule["batsim_version"]
    return row


def main(argv: list[str] | None = None) -> int:
    """Run every (trace, tau) case; write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", default="campaign-results/energy_tradeoff_batsched.csv",
                        help="the table to write (default: %(default)s)")
    parser.add_argument("--tau", type=float, action="append",
                        help="idle_time_to_sedate, repeatable (default: 0 60 300 1800 3600)")
    parser.add_argument("--trace", action="append", choices=sorted(CASES),
                        help="only these traces (default: both)")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds one Batsim run may take (default: %(default)s)")
    parser.add_argument("--keep", metavar="DIR",
                        help="keep Batsim's outputs under DIR; a case finished there before "
                             "is read back, not rerun (runs split over several invocations)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for trace, platform_name in CASES.items():
            if args.trace and trace not in args.trace:
                continue
            platform = INPUTS / platform_name
            nb_res = int(platform_name.removeprefix("power_").removesuffix(".xml"))
            workload = to_json(TRACES / trace, nb_res, work / f"{trace}.json")
            for tau in args.tau or TAUS:
                folder = work / f"{trace}-tau{tau:g}"
                base = {"policy": "batsched:energy_bf_idle_sleeper",
                        "label": "batsched idle sleeper", "workload": trace,
                        "platform": platform_name, "param.idle_time_to_sedate": tau,
                        "param.idle_timeout": tau,
                        "param.monitoring_period": MINIMAL["monitoring_period"]}
                try:
                    row, wall = run_case(workload, platform, tau, folder, args.timeout)
                    rows.append({**base, "status": "ok", **row})
                    log.info("%s tau=%g: bsld %.3f, %.4g J, %.0f s wall", trace, tau,
                             row["mean_bounded_slowdown"], row["consumed_joules"], wall)
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    rows.append({**base, "status": "error", "error": str(exc)[:300]})
                    log.warning("%s tau=%g failed: %s", trace, tau, exc)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    columns = list(dict.fromkeys(k for row in rows for k in row))
    with out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, restval="")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: repr(v) if isinstance(v, float) else v for k, v in row.items()})
    log.info("wrote %s (%d rows)", out, len(rows))
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
