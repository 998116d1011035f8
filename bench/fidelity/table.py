"""Regenerate docs/fidelity.md's latency table: our simulator against real Batsim 4.2.1.

For every platform file (default: Batsim 4.2.1's platforms, from the shared data folder beside
the clone) whose messages take time
in Batsim, and each scheduler, run the same workload twice and compare the jobs.csv files
job by job:

- ``batsched easy_bf``: real Batsim + batsched, and ``batpolicy fake-batsim`` + batsched;
- ``our easy``: real Batsim + ``batpolicy serve --policy easy``, and ``batpolicy simulate
  --policy easy`` (in-process).

The workload is the Grid'5000 delay workload (800 jobs, up to 32 machines) with
``--mmax 32``; on a platform with fewer machines, the same jobs with ``res`` capped at
its size. Columns: jobs whose allocation is equal, whose start is within 1 us of
Batsim's, and the largest start difference. Also with ``--zero-latency`` (the simulator
before the latency model), to show what the model changes.

    python bench/fidelity/table.py --batsim /opt/batsim-4.2.1/bin/batsim \
        --batsched /opt/batsim-4.2.1/bin/batsched --write docs/fidelity.md \
        --save bench/results/fidelity_latency.txt

Progress goes to stderr; the table (with commit and command) to stdout, into the file
given by ``--write`` between the ``fidelity-table`` markers, and whole into ``--save``.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from batpolicy.platforms.xml import parse_time, read_platform
from batpolicy.simulator.latency.driver import message_delays

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import free_port  # noqa: E402  (bench/harness.py)

log = logging.getLogger("fidelity")

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data" / "batsim"
if not SHARED.is_dir():
    SHARED = Path("/work/shared/data/batsim")
WORKLOAD = "batsim-experiments_g5k_workload_delay_seed0_size32.json"
MMAX = 32
_LATENCY = re.compile(r'\b(?:latency|lat|bb_lat|loopback_lat)="([^"]*)"')
BEGIN, END = "<!-- fidelity-table:begin -->", "<!-- fidelity-table:end -->"


@dataclass
class Agreement:
    """How one run of ours agrees with Batsim's, job by job (on jobs.csv's 6 decimals)."""

    jobs: int
    same_alloc: int
    same_start: int
    start_1us: int
    worst: float

    def cells(self, *, equal: bool = True) -> str:
        """Table cells: allocations, [starts equal,] starts within 1 us, worst difference."""
        n = self.jobs
        middle = f"{self.same_start}/{n} | " if equal else ""
        return f"{self.same_alloc}/{n} | {middle}{self.start_1us}/{n} | {self.worst:.6f}"


def compare(batsim_csv: Path, ours_csv: Path) -> Agreement:
    """Agreement of two jobs.csv files (jobs matched by id)."""
    def load(path: Path) -> dict[str, dict[str, str]]:
        with path.open() as f:
            return {row["job_id"]: row for row in csv.DictReader(f)}
    ref, ours = load(batsim_csv), load(ours_csv)
    same_alloc = same_start = start_1us = 0
    worst = 0.0
    for job, row in ref.items():
        other = ours.get(job)
        if other is None:
            worst = float("inf")
            continue
        same_alloc += row["allocated_resources"] == other["allocated_resources"]
        a, b = row["starting_time"], other["starting_time"]
        diff = abs(float(a) - float(b)) if a and b else (0.0 if a == b else float("inf"))
        same_start += a == b
        start_1us += diff <= 1e-6 + 1e-9  # one unit of the 6th decimal, read back as floats
        worst = max(worst, diff)
    return Agreement(len(ref), same_alloc, same_start, start_1us, worst)


def _reason(stderr: str) -> str:
    """The first CRITICAL/ERROR line of Batsim's log, without prefixes and file paths."""
    for line in stderr.splitlines():
        if "CRITICAL]" in line or "ERROR]" in line:
            text = line.split("] ", 2)[-1]
            return re.sub(r"(/[\w.-]+)+\.xml", "<platform>", text)[:100]
    return ""


class Runner:
    """Runs Batsim, batsched and batpolicy in a work directory."""

    def __init__(self, batsim: str, batsched: str, work: Path, timeout: float) -> None:
        self.batsim, self.batsched, self.work, self.timeout = batsim, batsched, work, timeout
        self.batpolicy = [sys.executable, "-m", "batpolicy"]
        self.failure = ""

    def _scheduler(self, kind: str, port: int) -> subprocess.Popen[bytes]:
        if kind == "easy_bf":
            cmd = [self.batsched, "-v", "easy_bf", "-s", f"tcp://*:{port}"]
        else:
            cmd = [*self.batpolicy, "serve", "--policy", kind, "-s", f"tcp://*:{port}"]
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def real(self, name: str, platform: Path, workload: Path, kind: str, flags: list[str]
             ) -> Path:
        """Real Batsim with scheduler ``kind``; its jobs.csv."""
        port = free_port()
        sched = self._scheduler(kind, port)
        time.sleep(0.5)
        prefix = self.work / f"{name}-batsim"
        self.failure = ""
        try:
            run = subprocess.run([self.batsim, "-p", str(platform), "-w", str(workload), "-e",
                                  str(prefix), "-s", f"tcp://localhost:{port}", *flags],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 timeout=self.timeout)
            if run.returncode != 0:
                self.failure = _reason(run.stderr) or f"exit status {run.returncode}"
                raise subprocess.CalledProcessError(run.returncode, self.batsim)
        finally:
            sched.kill()
            sched.wait()
        return Path(f"{prefix}_jobs.csv")

    def ours(self, name: str, platform: Path, workload: Path, kind: str, flags: list[str],
             zero_latency: bool) -> Path:
        """Our simulator (fake-batsim for batsched, simulate for our policies)."""
        prefix = self.work / f"{name}-ours{'-zl' if zero_latency else ''}"
        extra = [*flags, "--zero-latency"] if zero_latency else flags
        common = ["-p", str(platform), "-w", str(workload), "-e", str(prefix), "-q", *extra]
        if kind == "easy_bf":
            port = free_port()
            sched = self._scheduler(kind, port)
            time.sleep(0.3)
            try:
                subprocess.run([*self.batpolicy, "fake-batsim", *common, "-s",
                                f"tcp://localhost:{port}"], check=True, timeout=self.timeout)
            finally:
                sched.kill()
                sched.wait()
        else:
            subprocess.run([*self.batpolicy, "simulate", "--policy", kind, *common],
                           check=True, timeout=self.timeout)
        return Path(f"{prefix}_jobs.csv")


def capped_workload(source: Path, nb_machines: int, out: Path) -> Path:
    """``source`` with every job's ``res`` capped at ``nb_machines`` (written to ``out``)."""
    data = json.loads(source.read_text())
    for job in data["jobs"]:
        job["res"] = min(int(job["res"]), nb_machines)
    data["nb_res"] = nb_machines
    out.write_text(json.dumps(data))
    return out


def platforms_with_latencies(folder: Path) -> list[tuple[Path, int, str]]:
    """(file, machines, how our routes see it) of each platform that declares latencies."""
    found = []
    for path in sorted(folder.glob("*.xml")):
        values = _LATENCY.findall(path.read_text())
        if not any(parse_time(v) > 0 for v in values):
            continue
        try:
            platform = read_platform(path)
        except Exception as exc:  # noqa: BLE001 - a platform we cannot read is reported
            log.warning("%s: not readable (%s)", path.name, exc)
            continue
        delays = message_delays(platform)
        status = "modelled" if delays is not None and delays.has_latency() else "not modelled"
        found.append((path, len(platform.machines), status))
    return found


def main() -> None:
    """Command line; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batsim", default="/opt/batsim-4.2.1/bin/batsim")
    parser.add_argument("--batsched", default="/opt/batsim-4.2.1/bin/batsched")
    parser.add_argument("--platforms", type=Path, default=SHARED / "platforms")
    parser.add_argument("--workload", type=Path, default=SHARED / "workloads" / WORKLOAD)
    parser.add_argument("--schedulers", default="easy_bf,easy")
    parser.add_argument("--only", default="", help="comma-separated platform file names")
    parser.add_argument("--write", type=Path, help="markdown file to update between markers")
    parser.add_argument("--save", type=Path, help="also write the table to this file")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    logging.getLogger("batpolicy").setLevel(logging.ERROR)
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()  # what is measured
    rows = []
    platforms = platforms_with_latencies(args.platforms)
    if args.only:
        keep = set(args.only.split(","))
        platforms = [p for p in platforms if p[0].name in keep]
    with tempfile.TemporaryDirectory(prefix="fidelity-") as tmp:
        work = Path(tmp)
        runner = Runner(args.batsim, args.batsched, work, args.timeout)
        for index, (platform, machines, status) in enumerate(platforms, 1):
            nb = min(machines, MMAX)
            workload = args.workload if machines >= MMAX else capped_workload(
                args.workload, machines, work / f"capped{machines}.json")
            flags = ["--mmax", str(nb)]
            for kind in args.schedulers.split(","):
                name = f"{platform.stem}-{kind}"
                log.info("[%d/%d] %s, %s ...", index, len(platforms), platform.name, kind)
                try:
                    real = runner.real(name, platform, workload, kind, flags)
                except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
                    reason = runner.failure or type(exc).__name__
                    rows.append(f"| {platform.name} | all | {status} | Batsim aborts: "
                                f"{reason.replace('|', '/')} | | | | | | |")
                    break  # Batsim fails on the platform itself, whatever the scheduler
                cells = []
                for zero in (False, True):
                    ours = runner.ours(name, platform, workload, kind, flags, zero)
                    cells.append(compare(real, ours).cells(equal=not zero))
                rows.append(f"| {platform.name} ({nb} machines) | {kind} | {status} | "
                            f"{cells[0]} | {cells[1]} |")
    command = "python " + " ".join(shlex.quote(a) for a in
                                   [os.path.relpath(__file__, REPO), *sys.argv[1:]])
    table = "\n".join([
        f"Measured at commit `{commit}` with `{command}` (Batsim 4.2.1, batsched 1.4; "
        f"workload `{args.workload.name}`, `--mmax` as shown).",
        "",
        "| platform | scheduler | routes | allocations equal | starts equal | "
        "starts within 1 us | worst start diff (s) | `--zero-latency`: allocations | "
        "starts within 1 us | worst (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows])
    print(table)
    if args.save:
        args.save.write_text(table + "\n")
    if args.write:
        text = args.write.read_text()
        if BEGIN in text and END in text:
            head, rest = text.split(BEGIN, 1)
            text = head + BEGIN + "\n" + table + "\n" + END + rest.split(END, 1)[1]
        else:
            text += f"\n{BEGIN}\n{table}\n{END}\n"
        args.write.write_text(text)
        log.info("table written into %s", args.write)


if __name__ == "__main__":
    main()
