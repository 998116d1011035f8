"""pybatsim schedulers run in-process by ``batpolicy simulate`` against real Batsim (issue 35).

Two measurements, each writing ``bench/results/<name>.txt`` headed by the commit, the
machine and the command:

``fidelity`` (``pybatsim_fidelity.txt``)
    Every scheduler of pybatsim 3.2.1's bundled ``schedulers`` package, on each shared
    Batsim workload whose profiles the embedded simulator models (delays and sequences of
    delays; Batsim 4.2.1's own workloads, plus the transcripts' walltime_mix_120.json)
    on a zero-latency cluster of the workload's size, and with ``--kth`` on whole
    KTH-SP2: real Batsim 4.2.1 + ``pybatsim NAME``, then
    ``batpolicy simulate --policy pybatsim:NAME`` on the same files; the two jobs.csv
    compared byte for byte. A real run that does not reach the end says why (Batsim's
    CRITICAL line, the scheduler's last error line, or a timeout).

``speed`` (``pybatsim_inprocess.txt``)
    Whole KTH-SP2 (28,481 jobs, 100 hosts) with pybatsim's ``easyBackfill`` three ways,
    alternated round by round: real Batsim + pybatsim over ZeroMQ, ``batpolicy
    fake-batsim`` + pybatsim over ZeroMQ, and in-process; wall seconds of the whole run and
    CPU seconds of all its processes (``RUSAGE_CHILDREN``); medians and the ratios
    real / in-process and fake-batsim / in-process. Each round also checks the three
    jobs.csv are identical.

Usage::

    python bench/performance/pybatsim_inprocess.py fidelity [--kth] [--schedulers NAME ...]
    python bench/performance/pybatsim_inprocess.py speed [--rounds 3] [--max-jobs N]

Needs Batsim and pybatsim under ``--prefix`` (built outside the repository) and
pybatsim in this interpreter (docs/pybatsim.md).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import SHARED_DATA, free_port, write_results  # noqa: E402  (bench/harness.py)
from serve_vs_batsched import PLATFORM, prepare  # noqa: E402  (same KTH inputs)

#: pybatsim 3.2.1's bundled schedulers (the modules of its ``schedulers`` package that
#: define the class ``pybatsim NAME`` looks for), with the launcher options and Batsim
#: flags each needs.
BUNDLED: dict[str, tuple[dict, tuple[str, ...]]] = {
    "easyBackfill": ({}, ()),
    "fcfsSchedSleep": ({}, ()),
    "fillerSched": ({}, ()),
    "fillerSchedWithEvents": ({}, ()),
    "randomSched": ({}, ()),
    "schedBebida": ({"variant": "no-io"}, ("--enable-dynamic-jobs",
                                           "--acknowledge-dynamic-jobs",
                                           "--forward-profiles-on-submission")),
    "schedEasySjfBackfill": ({}, ()),
    "schedFcfs": ({}, ()),
    "schedFiller": ({}, ()),
    "schedSendRecv": ({}, ()),
}
WORKLOADS = SHARED_DATA / "batsim" / "workloads"
#: Profile types the embedded simulator models as Batsim does (docs/simulator.md).
MODELLED = {"delay", "composed"}


@dataclass(frozen=True, slots=True)
class Outcome:
    """One run: did it end, why not, its jobs.csv, its wall and CPU seconds."""

    ok: bool
    why: str
    jobs: Path
    wall_s: float
    cpu_s: float


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _last_error(log: Path) -> str:
    """Batsim's CRITICAL line or the scheduler's last exception line, shortened."""
    lines = log.read_text(errors="replace").splitlines() if log.is_file() else []
    for line in lines:
        if "CRITICAL" in line:
            return line.split("CRITICAL]", 1)[-1].strip()[:220]
    errors = [line for line in lines if "Error" in line or "Exception" in line]
    return errors[-1].strip()[:220] if errors else ""


def real_run(prefix: Path, name: str, workload: Path, platform: Path, out: Path,
             timeout_s: float) -> Outcome:
    """Real Batsim 4.2.1 + ``pybatsim NAME`` over ZeroMQ (TCP on the loopback)."""
    options, flags = BUNDLED.get(name, ({}, ()))
    return _pair([str(prefix / "bin" / "batsim"), "-p", str(platform), "-w", str(workload),
                  "-e", str(out / "real"), "-q", *flags, "-s", "{endpoint}"],
                 [str(prefix / "venv" / "bin" / "pybatsim"), name, "-s", "{endpoint}",
                  "-v", "warning", "-t", "600000", "-o", json.dumps(options)],
                 out, "real", Path(f"{out / 'real'}_jobs.csv"), timeout_s)


def fake_run(prefix: Path, name: str, workload: Path, platform: Path, out: Path,
             timeout_s: float) -> Outcome:
    """``batpolicy fake-batsim`` + ``pybatsim NAME`` over ZeroMQ (TCP on the loopback)."""
    options, flags = BUNDLED.get(name, ({}, ()))
    return _pair([sys.executable, "-m", "batpolicy", "fake-batsim", "-p", str(platform), "-w",
                  str(workload), "-e", str(out / "fake"), "-q", *flags, "-s", "{endpoint}",
                  "--timeout", str(timeout_s)],
                 [str(prefix / "venv" / "bin" / "pybatsim"), name, "-s", "{endpoint}",
                  "-v", "warning", "-t", "600000", "-o", json.dumps(options)],
                 out, "fake", Path(f"{out / 'fake'}_jobs.csv"), timeout_s)


def _pair(simulator: list[str], scheduler: list[str], out: Path, tag: str, jobs: Path,
          timeout_s: float) -> Outcome:
    """Start the scheduler, then the simulator; reap both; say how it went."""
    out.mkdir(parents=True, exist_ok=True)
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    simulator = [a.replace("{endpoint}", endpoint) for a in simulator]
    scheduler = [a.replace("{endpoint}", endpoint) for a in scheduler]
    sim_log, sched_log = out / f"{tag}.sim.log", out / f"{tag}.sched.log"
    cpu, began = _children_cpu(), time.perf_counter()
    with sched_log.open("w") as s_out, sim_log.open("w") as b_out:
        sched = subprocess.Popen(scheduler, stdout=s_out, stderr=subprocess.STDOUT, cwd=out)
        sim = subprocess.Popen(simulator, stdout=b_out, stderr=subprocess.STDOUT, cwd=out)
        try:  # a scheduler that crashed leaves Batsim waiting forever: stop it then
            deadline = time.monotonic() + timeout_s
            while sim.poll() is None and time.monotonic() < deadline and \
                    sched.poll() in (None, 0):
                time.sleep(0.02)
            if sim.poll() is None and sched.poll() not in (None, 0):
                sim.kill()
            sim_status = sim.wait(timeout=max(0.0, deadline - time.monotonic()))
            if sim_status != 0 and sched.poll() is None:  # it waits for a message forever
                sched.kill()
            sched_status = sched.wait(timeout=30)
        except subprocess.TimeoutExpired:
            sim_status = sched_status = None
        finally:
            for proc in (sim, sched):
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    wall, cpu = time.perf_counter() - began, _children_cpu() - cpu
    if sim_status is None:
        why = _last_error(sched_log) or _last_error(sim_log)
        return Outcome(False, f"timeout after {timeout_s:.0f} s" + (f": {why}" if why else ""),
                       jobs, wall, cpu)
    if sim_status != 0 or sched_status != 0:
        why = _last_error(sim_log) or _last_error(sched_log)
        return Outcome(False, f"simulator exit {sim_status}, scheduler exit {sched_status}: "
                              f"{why}", jobs, wall, cpu)
    return Outcome(True, "", jobs, wall, cpu)


def inprocess_run(name: str, workload: Path, platform: Path, out: Path,
                  timeout_s: float) -> Outcome:
    """``batpolicy simulate --policy pybatsim:NAME`` (a fresh process, as a user runs it)."""
    options, flags = BUNDLED.get(name, ({}, ()))
    out.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "batpolicy", "simulate", "--policy", f"pybatsim:{name}",
            "--param", f"options={json.dumps(options)}", "-p", str(platform), "-w",
            str(workload), "-e", str(out / "inproc"), "-q", *flags]
    log = out / "inproc.log"
    cpu, began = _children_cpu(), time.perf_counter()
    with log.open("w") as said:
        try:
            status = subprocess.run(argv, stdout=said, stderr=subprocess.STDOUT, cwd=out,
                                    timeout=timeout_s).returncode
        except subprocess.TimeoutExpired:
            status = None
    wall, cpu = time.perf_counter() - began, _children_cpu() - cpu
    jobs = Path(f"{out / 'inproc'}_jobs.csv")
    if status != 0:
        lines = [x for x in log.read_text().splitlines() if "ERROR" in x]
        return Outcome(False, f"exit {status}: {(lines or [''])[-1][:220]}", jobs, wall, cpu)
    return Outcome(True, "", jobs, wall, cpu)


def _modelled(path: Path) -> bool:
    data = json.loads(path.read_text())
    return bool(data.get("jobs")) and all(p.get("type") in MODELLED
                                          for p in data.get("profiles", {}).values())


def _platform_for(workload: Path, workdir: Path) -> Path:
    """A zero-latency cluster of the workload's ``nb_res`` machines (Batsim = simulator)."""
    nb_res = json.loads(workload.read_text())["nb_res"]
    path = workdir / f"cluster{nb_res}.xml"
    if not path.is_file():
        path.write_text(PLATFORM.format(last=nb_res - 1))
    return path


def fidelity(args: argparse.Namespace) -> list[str]:
    """Real Batsim + each bundled scheduler against the same scheduler in-process."""
    workdir = Path(args.workdir)
    inputs = sorted(p for p in WORKLOADS.glob("*.json") if _modelled(p))
    inputs.append(SHARED_DATA / "transcripts" / "inputs" / "walltime_mix_120.json")
    cases = [(w, _platform_for(w, workdir)) for w in inputs]
    if args.kth:
        kth, kth_platform, _ = prepare("KTH", None, workdir)
        cases.append((kth, kth_platform))
    lines = [f"# command: python {' '.join(map(shlex.quote, sys.argv))}",
             "# real = Batsim 4.2.1 + pybatsim 3.2.1 NAME over ZeroMQ; in-process = "
             "batpolicy simulate --policy pybatsim:NAME; same workload, zero-latency "
             "platform of its size; 'identical' = the two jobs.csv byte for byte", "",
             f"{'scheduler':<22} {'workload':<52} {'result'}"]
    summary: dict[str, list[str]] = {}
    for name in args.schedulers:
        for workload, platform in cases:
            out = workdir / name / workload.stem
            shutil.rmtree(out, ignore_errors=True)
            real = real_run(args.prefix, name, workload, platform, out, args.timeout)
            if not real.ok:
                result = f"real run fails: {real.why}"
            else:
                ours = inprocess_run(name, workload, platform, out, args.timeout)
                if not ours.ok:
                    result = f"real ends; in-process fails: {ours.why}"
                elif ours.jobs.read_bytes() == real.jobs.read_bytes():
                    result = (f"identical ({len(real.jobs.read_text().splitlines()) - 1} "
                              f"jobs; real {real.wall_s:.1f} s, in-process "
                              f"{ours.wall_s:.1f} s)")
                else:
                    result = "DIFFERENT jobs.csv: " + _first_difference(real.jobs, ours.jobs)
            summary.setdefault(name, []).append(result.split(" ", 1)[0])
            line = f"{name:<22} {workload.name:<52} {result}"
            print(line, flush=True)
            lines.append(line)
    lines += ["", "# per scheduler: " + "; ".join(
        f"{n}: " + ", ".join(f"{k} {v}" for k, v in sorted(
            {r: s.count(r) for r in s}.items())) for n, s in summary.items())]
    return lines


def _first_difference(real: Path, ours: Path) -> str:
    a, b = real.read_text().splitlines(), ours.read_text().splitlines()
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"line {i + 1}: real {x[:90]!r} / in-process {y[:90]!r}"
    return f"{len(a)} lines against {len(b)}"


def speed(args: argparse.Namespace) -> list[str]:
    """Whole KTH, easyBackfill three ways, alternated rounds."""
    workdir = Path(args.workdir)
    workload, platform, nb_jobs = prepare("KTH", args.max_jobs, workdir)
    ways = {"real Batsim + pybatsim (ZeroMQ)": real_run,
            "fake-batsim + pybatsim (ZeroMQ)": fake_run,
            "in-process (simulate --policy pybatsim:easyBackfill)": None}
    real, fake, inproc = list(ways)
    differing: set[int] = set()
    walls: dict[str, list[float]] = {w: [] for w in ways}
    cpus: dict[str, list[float]] = {w: [] for w in ways}
    began = time.strftime("%H:%M")
    for round_ in range(args.rounds):
        order = list(ways) if round_ % 2 == 0 else list(reversed(ways))  # alternated
        csvs = []
        for way in order:
            out = workdir / f"round{round_}" / way.split()[0]
            shutil.rmtree(out, ignore_errors=True)
            run = ways[way]
            outcome = (run(args.prefix, "easyBackfill", workload, platform, out, args.timeout)
                       if run is not None else
                       inprocess_run("easyBackfill", workload, platform, out, args.timeout))
            if not outcome.ok:
                raise SystemExit(f"{way}: {outcome.why} (logs in {out})")
            walls[way].append(outcome.wall_s)
            cpus[way].append(outcome.cpu_s)
            csvs.append(outcome.jobs.read_bytes())
            print(f"round {round_ + 1} {way}: {outcome.wall_s:.2f} s wall, "
                  f"{outcome.cpu_s:.2f} s CPU", flush=True)
        by_way = dict(zip(order, csvs, strict=True))
        if by_way[inproc] != by_way[fake]:
            raise SystemExit(f"round {round_ + 1}: in-process and fake-batsim jobs.csv differ "
                             f"({workdir})")
        differing.add(_rows_differing(by_way[real], by_way[inproc]))
    same = ("identical to real Batsim's" if differing == {0} else
            f"{' / '.join(map(str, sorted(differing)))} of {nb_jobs} rows differ from real "
            "Batsim's (the simulator's order of a completion and a submission at one "
            "instant, docs/simulator.md)")
    lines = [f"# command: python {' '.join(map(shlex.quote, sys.argv))}",
             f"# KTH-SP2 ({nb_jobs} jobs, 100 hosts), pybatsim 3.2.1 easyBackfill; "
             f"{args.rounds} alternated rounds from {began} UTC; load average at the end "
             f"{os.getloadavg()[0]:.1f}; in every round the in-process jobs.csv is "
             f"byte-identical to fake-batsim + pybatsim's; {same}",
             "# wall s = the whole run; cpu s = user+sys of all its processes; "
             "x = that way / in-process (medians)", "",
             f"{'way':<55} {'wall s':>8} {'cpu s':>8} {'wall x':>7} {'cpu x':>7}   "
             "runs wall/cpu"]
    base_wall, base_cpu = statistics.median(walls[inproc]), statistics.median(cpus[inproc])
    for way in ways:
        wall, cpu = statistics.median(walls[way]), statistics.median(cpus[way])
        runs = " ".join(f"{w:.1f}/{c:.1f}" for w, c in zip(walls[way], cpus[way], strict=True))
        lines.append(f"{way:<55} {wall:8.2f} {cpu:8.2f} {wall / base_wall:7.2f} "
                     f"{cpu / base_cpu:7.2f}   {runs}")
    return lines


def _rows_differing(a: bytes, b: bytes) -> int:
    """How many jobs' rows differ between two jobs.csv (rows matched by job id)."""
    def rows(data: bytes) -> dict[str, str]:
        return {line.split(",", 1)[0]: line for line in data.decode().splitlines()[1:]}

    ra, rb = rows(a), rows(b)
    return sum(ra.get(job) != rb.get(job) for job in ra.keys() | rb.keys())


def main() -> None:
    """Run one measurement and write its results file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("fidelity", "speed"))
    parser.add_argument("--prefix", type=Path, default=Path("/opt/batsim-4.2.1"),
                        help="where Batsim and pybatsim's venv are installed")
    parser.add_argument("--workdir", default="/tmp/pybatsim_inprocess")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="S")
    parser.add_argument("--schedulers", nargs="+", default=list(BUNDLED))
    parser.add_argument("--kth", action="store_true", help="fidelity: also whole KTH-SP2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-jobs", type=int, default=None, help="speed: first N KTH jobs")
    parser.add_argument("--name", help="results file name (default: per measurement)")
    args = parser.parse_args()
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    lines = fidelity(args) if args.what == "fidelity" else speed(args)
    default = "pybatsim_fidelity" if args.what == "fidelity" else "pybatsim_inprocess"
    print(write_results(args.name or default, lines))


if __name__ == "__main__":
    main()
