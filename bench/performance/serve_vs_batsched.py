"""``batpolicy serve`` beside real Batsim 4.2.1, against batsched 1.4 and pybatsim 3.2.1 (issue 14).

Builds nothing: it runs the Batsim, batsched and pybatsim found under ``--prefix``
(default ``/opt/batsim-4.2.1``, where the shared folder's build script installs them) and the
``batpolicy`` of the Python running this script.

Inputs, written once to ``--workdir``: each SWF trace is read with our reader
(:func:`batpolicy.io.swf.read_swf`, ``--max-jobs`` as ``simulate`` takes it)
and written as a Batsim JSON workload (every job's JSON as we would forward it, profiles
as read); the platform is a zero-latency homogeneous cluster of the trace header's size
(KTH-SP2: 100 hosts) plus Batsim's master host, like the bundled
``zero_lat_cluster128.xml``.

Schedulers, each started first on its own port, then Batsim connects:

- ``batsched easy_bf`` and ``batsched fcfs`` (C++);
- ``pybatsim easyBackfill``;
- ``batpolicy serve --policy easy|fcfs|dpsa-n|redirection`` (redirection with Batsim's
  ``--enable-dynamic-jobs --enable-profile-reuse``, which it needs).
- ``floor-fcfs``: ``bench/performance/floor_fcfs.py``, the cheapest FCFS we can write in Python (raw
  dicts, no checks), to tell CPython's floor on this machine from our own layers; not in
  the default set.

Runs alternate (one run of every scheduler per round, ``--rounds`` rounds) so drift of
a shared machine hits all alike; figures are medians. Per run:

- ``sched s``: Batsim's ``scheduling_time`` from its ``_schedule.csv`` (wall time Batsim
  spent waiting for the scheduler's replies);
- ``cpu s``: user + system seconds of the scheduler process (``os.wait4``'s resource
  usage of the child, its threads included: ZeroMQ's I/O thread too);
- ``sys s``: the system part of ``cpu s``, kernel time for sockets and wake-ups, which
  any ZeroMQ scheduler pays per message (the rest, user time, is the scheduler's own
  work and libzmq's);
- ``wall s``: the whole run, scheduler start to both processes reaped.

``--pin`` runs Batsim on CPU 0 and the scheduler on CPU 1 (``os.sched_setaffinity`` in
each child, every scheduler alike), as a benchmark on a multi-core machine usually does:
the processes no longer migrate between cores and lose their caches on the way, which
costs a large-footprint interpreter more than batsched's C++ (docs/performance.md).

``--ipc`` has every pair talk over a Unix socket (``ipc://`` in the run's folder) instead
of TCP on the loopback, as a user running both on one machine may choose (Batsim's
``-s`` and serve's ``-s`` take any ZeroMQ endpoint): less kernel work per message for
every scheduler.

``--callgrind`` runs each scheduler once under valgrind's callgrind instead of timing it
and reports the instructions its whole process executed (every thread: libzmq's I/O
thread and start-up included), per job and against batsched's: the same conversation
gives the same count whatever the machine's load, so two trees can be compared on a
shared VM where CPU seconds drift by 10-20 % (``docs/performance.md``). A Python
scheduler's CPU seconds beside Batsim follow its instructions: serve, the Python floor
and batsched each run at a steady rate of instructions per CPU second on one machine
(batsched's C++ at a higher rate than CPython), so the ratio to batsched in instructions
is not the ratio in CPU seconds; it tells what a change saves.

``--python [LABEL=]PATH`` (repeatable) runs every Python scheduler (``serve``, the floor)
under that interpreter, which must have ``batpolicy`` installed; with several, each
Python scheduler runs once per interpreter per round, named ``serve-easy@LABEL``. The
interpreter's build matters as much as our code: a CPython built without profile-guided
and link-time optimisation, with a shared ``libpython`` (pyenv's default build), costs
serve about a fifth more CPU in-process and a tenth more beside Batsim than a
distribution's or python.org's build (docs/performance.md, "Measuring on a shared VM").
The header names each interpreter, its version and build.

Ratios: ``x batsched`` is ours / batsched's of the same algorithm (easy_bf for
``easy``, dpsa-n, redirection and pybatsim; fcfs for ``fcfs``), so below 1 is faster than
batsched; ``x easy`` is a policy / ``serve easy``. ``paired`` is the median of each round's
own ratio to batsched (its two runs a minute apart): on this VM, whose speed drifts by
10-20 % within a benchmark, it moves less than the ratio of the medians, which compares
runs from different minutes. Results go to
``bench/results/serve_vs_batsched.txt`` (``serve_vs_batsched_instructions.txt`` with
``--callgrind``) with the commit, the machine and the command, above the earlier runs
(kept).

Usage::

    python bench/performance/serve_vs_batsched.py           # whole KTH, 20,000 RICC jobs; 3 rounds
    python bench/performance/serve_vs_batsched.py --quick   # 2,000 jobs of each, 1 round, not saved
    python bench/performance/serve_vs_batsched.py --schedulers batsched-easy serve-easy --rounds 5
    python bench/performance/serve_vs_batsched.py --traces KTH --python pyenv=python \
        --python debian=/tmp/venvdeb/bin/python   # one interpreter against another
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for harness.py
from harness import SHARED_DATA, free_port, write_results  # noqa: E402  (bench/harness.py)

TRACES = {"KTH": SHARED_DATA / "traces" / "KTH-SP2-1996-2.swf.gz",
          "RICC": SHARED_DATA / "traces" / "RICC-2010-2.swf.gz"}
#: Jobs kept from each trace (None: all).
DEFAULT_JOBS = {"KTH": None, "RICC": 20_000}
QUICK_JOBS = 2_000


@dataclass(frozen=True, slots=True)
class Scheduler:
    """One scheduler to compare: how to start it and what it is compared with."""

    name: str
    argv: tuple[str, ...]  # "{endpoint}" is replaced by the endpoint to bind
    baseline: str  # name of the batsched scheduler running the same algorithm
    batsim_flags: tuple[str, ...] = ()
    in_default: bool = True  # run when --schedulers is not given
    python: bool = False  # runs under the interpreter(s) given by --python

    def under(self, label: str, interpreter: str) -> Scheduler:
        """The same Python scheduler run by ``interpreter``, ``NAME@LABEL`` if labelled."""
        return replace(self, name=self.name + (f"@{label}" if label else ""),
                       argv=(interpreter, *self.argv[1:]))


def schedulers(prefix: Path) -> dict[str, Scheduler]:
    """Every scheduler this benchmark knows, by name (Python ones under ``sys.executable``)."""
    batsched = str(prefix / "bin" / "batsched")
    pybatsim = str(prefix / "venv" / "bin" / "pybatsim")
    serve = (sys.executable, "-m", "batpolicy", "serve", "-s", "{endpoint}", "--policy")
    dynamic = ("--enable-dynamic-jobs", "--enable-profile-reuse")
    found = [
        Scheduler("batsched-easy", (batsched, "-v", "easy_bf", "-s", "{endpoint}"),
                  "batsched-easy"),
        Scheduler("pybatsim-easy", (pybatsim, "easyBackfill", "-s", "{endpoint}",
                                    "-v", "warning"), "batsched-easy"),
        Scheduler("serve-easy", (*serve, "easy"), "batsched-easy", python=True),
        Scheduler("batsched-fcfs", (batsched, "-v", "fcfs", "-s", "{endpoint}"),
                  "batsched-fcfs"),
        Scheduler("serve-fcfs", (*serve, "fcfs"), "batsched-fcfs", python=True),
        Scheduler("serve-dpsa-n", (*serve, "dpsa-n"), "batsched-easy", python=True),
        Scheduler("serve-redirection", (*serve, "redirection"), "batsched-easy", dynamic,
                  python=True),
        # not a product: the cheapest Python FCFS (bench/performance/floor_fcfs.py), the
        # floor under serve
        Scheduler("floor-fcfs", (sys.executable, str(Path(__file__).with_name("floor_fcfs.py")),
                                 "{endpoint}"), "batsched-fcfs", in_default=False, python=True),
    ]
    return {s.name: s for s in found}


PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="AS0" routing="Full">
    <cluster id="compute" prefix="h" suffix="" radical="0-{last}"
        speed="1Gf" bw="100GBps" lat="0us" bb_bw="1000GBps" bb_lat="0us"
        loopback_bw="1000GBps" loopback_lat="0us" />
    <cluster id="master" prefix="master_host" suffix="" radical="0-0"
        speed="1Gf" bw="100GBps" lat="0us" bb_bw="1000GBps" bb_lat="0us"
        loopback_bw="1000GBps" loopback_lat="0us">
        <prop id="role" value="master" />
    </cluster>
    <link id="backbone" bandwidth="1000GBps" latency="0us" />
    <zoneRoute src="compute" dst="master" gw_src="hcompute_router"
        gw_dst="master_hostmaster_router">
        <link_ctn id="backbone" />
    </zoneRoute>
</zone>
</platform>
"""


def prepare(trace: str, max_jobs: int | None, workdir: Path) -> tuple[Path, Path, int]:
    """Write the Batsim JSON workload and the platform of a trace; return them and the jobs."""
    from batpolicy.io.swf import read_swf

    tag = f"{trace}-{max_jobs or 'all'}"
    workload_path, platform_path = workdir / f"{tag}.json", workdir / f"{tag}.xml"
    workload = read_swf(TRACES[trace], max_jobs=max_jobs)
    if workload.nb_res is None:
        raise SystemExit(f"{TRACES[trace]}: no platform size in the header")
    jobs = [{**job.raw, "id": job.name} for job in workload.jobs]
    workload_path.write_text(json.dumps({"nb_res": workload.nb_res, "jobs": jobs,
                                         "profiles": workload.profiles}))
    platform_path.write_text(PLATFORM.format(last=workload.nb_res - 1))
    return workload_path, platform_path, len(jobs)


@dataclass(frozen=True, slots=True)
class Run:
    """Figures of one run."""

    scheduling_s: float
    cpu_s: float
    wall_s: float
    sys_s: float  # the system part of cpu_s (ZeroMQ's wake-ups, mostly)


def batsim_argv(batsim: Path, platform: Path, workload: Path, prefix: Path, endpoint: str,
                flags: tuple[str, ...] = ()) -> list[str]:
    """Batsim's command line for one run: outputs under ``prefix``, quiet."""
    return [str(batsim), "-p", str(platform), "-w", str(workload), "-e", str(prefix),
            "-s", endpoint, "-q", *flags]


def _on_cpu(cpu: int | None) -> Callable[[], None] | None:
    """A ``preexec_fn`` keeping the child on one CPU, or None to let it float."""
    if cpu is None:
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


def run_once(batsim: Path, scheduler: Scheduler, workload: Path, platform: Path,
             out: Path, timeout_s: float, pin: bool = False, ipc: bool = False) -> Run:
    """Start the scheduler, then Batsim; reap both; read Batsim's schedule.csv.

    ``pin``: Batsim on CPU 0, the scheduler on CPU 1. ``ipc``: a Unix socket in ``out``
    instead of TCP on the loopback.
    """
    out.mkdir(parents=True, exist_ok=True)
    endpoint = (f"ipc://{out.resolve() / scheduler.name}.sock" if ipc
                else f"tcp://127.0.0.1:{free_port()}")
    if len(endpoint) > 100:  # a Unix socket's path holds at most 107 bytes
        raise SystemExit(f"--ipc: {endpoint} is too long for a Unix socket: "
                         "give a shorter --workdir")
    argv = [a.replace("{endpoint}", endpoint) for a in scheduler.argv]
    prefix = out / scheduler.name
    began = time.perf_counter()
    with open(out / f"{scheduler.name}.sched.log", "w") as sched_log, \
            open(out / f"{scheduler.name}.batsim.log", "w") as batsim_log:
        sched = subprocess.Popen(argv, stdout=sched_log, stderr=subprocess.STDOUT,
                                 preexec_fn=_on_cpu(1 if pin else None))
        sim = subprocess.Popen(batsim_argv(batsim, platform, workload, prefix,
                                           endpoint, scheduler.batsim_flags),
                               stdout=batsim_log, stderr=subprocess.STDOUT,
                               preexec_fn=_on_cpu(0 if pin else None))
        try:
            sim_status = sim.wait(timeout=timeout_s)
            deadline = time.monotonic() + 30
            while True:  # wait4 gives the child's own resource usage
                pid, status, usage = os.wait4(sched.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(argv, 30)
                time.sleep(0.005)
            sched.returncode = os.waitstatus_to_exitcode(status)
        finally:
            for proc in (sim, sched):
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    wall = time.perf_counter() - began
    if sim_status != 0 or sched.returncode != 0:
        raise SystemExit(f"{scheduler.name}: batsim exit {sim_status}, scheduler exit "
                         f"{sched.returncode}; see the logs in {out}")
    with open(f"{prefix}_schedule.csv", newline="") as f:
        row = next(csv.DictReader(f))
    return Run(float(row["scheduling_time"]), usage.ru_utime + usage.ru_stime, wall,
               usage.ru_stime)


def interpreters(given: list[str] | None) -> list[tuple[str, str]]:
    """``(label, path)`` of each ``--python [LABEL=]PATH``; else ``sys.executable``, unlabelled."""
    if not given:
        return [("", sys.executable)]
    found = []
    for item in given:
        label, sep, path = item.partition("=")
        if not sep:
            label, path = "", item
        if shutil.which(path) is None:
            raise SystemExit(f"--python {item}: no interpreter {path}")
        found.append((label, path))
    if len(found) > 1 and len({label for label, _ in found}) < len(found):
        raise SystemExit("--python: give each interpreter its own LABEL= when there are several")
    return found


def interpreter_facts(path: str) -> str:
    """``batpolicy --version`` as run by ``path``: versions, the interpreter's build."""
    done = subprocess.run([path, "-m", "batpolicy", "--version"], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"--python {path}: cannot run batpolicy with it: "
                         f"{done.stderr.strip().splitlines()[-1:]}")
    return done.stdout.strip()


def median(runs: list[Run], field: str) -> float:
    """Median of one figure over runs."""
    return statistics.median(getattr(r, field) for r in runs)


def paired(runs: list[Run], base: list[Run], field: str) -> float:
    """Median over rounds of one figure's ratio to ``base`` in the same round.

    >>> paired([Run(1.0, 2.0, 0.0, 0.0), Run(3.0, 3.0, 0.0, 0.0)],
    ...        [Run(1.0, 1.0, 0.0, 0.0), Run(2.0, 4.0, 0.0, 0.0)], "cpu_s")
    1.375
    """
    return statistics.median(getattr(r, field) / getattr(b, field)
                             for r, b in zip(runs, base, strict=True))


def report(trace: str, jobs: int, chosen: list[Scheduler],
           results: dict[str, list[Run]]) -> list[str]:
    """The table of one trace: medians, ratios to batsched and to serve easy."""
    counts = sorted({len(runs) for runs in results.values()})
    width = max(18, *(len(s.name) for s in chosen))
    lines = [f"## {trace}: {jobs} jobs; medians of {'-'.join(map(str, counts))} "
             "alternated runs (each run in the last column)",
             f"{'scheduler':<{width}} {'sched s':>8} {'cpu s':>8} {'sys s':>6} {'wall s':>8} "
             f"{'sched x batsched':>17} {'cpu x batsched':>15} {'sched x easy':>13} "
             f"{'cpu x easy':>11} {'paired sched / cpu':>19}   runs sched s / cpu s"]
    for s in chosen:
        runs = results[s.name]
        base_name, _, label = s.name.partition("@")
        easy = results.get("serve-easy" + (f"@{label}" if label else ""))
        base = results.get(s.baseline)
        compared = base is not None and s.name != s.baseline
        cells = [f"{s.name:<{width}} {median(runs, 'scheduling_s'):>8.2f} "
                 f"{median(runs, 'cpu_s'):>8.2f} {median(runs, 'sys_s'):>6.2f} "
                 f"{median(runs, 'wall_s'):>8.2f}"]
        if compared:
            cells.append(f"{median(runs, 'scheduling_s') / median(base, 'scheduling_s'):>17.2f}"
                         f" {median(runs, 'cpu_s') / median(base, 'cpu_s'):>15.2f}")
        else:
            cells.append(f"{'':>17} {'':>15}")
        if easy is not None and base_name in ("serve-dpsa-n", "serve-redirection"):
            cells.append(f"{median(runs, 'scheduling_s') / median(easy, 'scheduling_s'):>13.2f}"
                         f" {median(runs, 'cpu_s') / median(easy, 'cpu_s'):>11.2f}")
        else:
            cells.append(f"{'':>13} {'':>11}")
        if compared:
            cells.append(f"{paired(runs, base, 'scheduling_s'):>10.2f} / "
                         f"{paired(runs, base, 'cpu_s'):.2f}  ")
        else:
            cells.append(f"{'':>19}")
        cells.append("   " + " ".join(f"{r.scheduling_s:.1f}/{r.cpu_s:.1f}" for r in runs))
        lines.append(" ".join(cells))
    return lines


#: The prefix of a scheduler's command line under ``--callgrind`` (its log gets the count).
CALLGRIND = ("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null")


def instructions_of(log: Path) -> int:
    """The instructions callgrind counted, from the ``I   refs:`` line of a scheduler's log."""
    for line in log.read_text(errors="replace").splitlines():
        if "I   refs:" in line:
            return int(line.rsplit(":", 1)[1].replace(",", "").strip())
    raise SystemExit(f"{log}: no callgrind count (did the scheduler run under valgrind?)")


def instructions_report(trace: str, jobs: int, chosen: list[Scheduler], out: Path) -> list[str]:
    """The table of one trace under ``--callgrind``: instructions, per job, x batsched."""
    counts = {s.name: instructions_of(out / f"{s.name}.sched.log") for s in chosen}
    width = max(len(s.name) for s in chosen) + 2
    lines = [f"## {trace}: {jobs} jobs; instructions of the scheduler process (callgrind, "
             "all threads, start-up included)",
             f"{'scheduler':<{width}} {'instructions':>16} {'per job':>10} {'x batsched':>11}"]
    for s in chosen:
        base = counts.get(s.baseline)
        ratio = f"{counts[s.name] / base:11.3f}" if base and s.name != s.baseline else ""
        lines.append(f"{s.name:<{width}} {counts[s.name]:>16,} {counts[s.name] / jobs:>10,.0f} "
                     f"{ratio}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the comparison and print (and save) the tables."""
    known = schedulers(Path("/opt/batsim-4.2.1"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", default="/opt/batsim-4.2.1", type=Path,
                        help="where Batsim, batsched and pybatsim are installed")
    parser.add_argument("--traces", nargs="+", choices=sorted(TRACES), default=list(TRACES))
    parser.add_argument("--schedulers", nargs="+", choices=list(known),
                        default=[s.name for s in known.values() if s.in_default])
    parser.add_argument("--rounds", type=int, default=3, help="alternated runs of each")
    parser.add_argument("--max-jobs", type=int, help="jobs kept from every trace")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: {QUICK_JOBS} jobs of each trace, 1 round, not saved")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/batpolicy-serve-bench"))
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--ipc", action="store_true",
                        help="Batsim and the scheduler talk over a Unix socket (ipc://), "
                             "not TCP on the loopback (every scheduler alike)")
    parser.add_argument("--pin", action="store_true",
                        help="Batsim on CPU 0, the scheduler on CPU 1 (every scheduler alike)")
    parser.add_argument("--callgrind", action="store_true",
                        help="one run of each under callgrind: the scheduler process's "
                             "instructions instead of its times")
    parser.add_argument("--python", action="append", metavar="[LABEL=]PATH",
                        help="interpreter for the Python schedulers (repeatable; default: "
                             "this one)")
    args = parser.parse_args(argv)
    pythons = interpreters(args.python)
    if args.pin and not {0, 1} <= os.sched_getaffinity(0):
        raise SystemExit("--pin needs CPUs 0 and 1")
    if args.quick:
        args.rounds, args.no_save = 1, True
    if args.callgrind:
        if shutil.which("valgrind") is None:
            raise SystemExit("--callgrind needs valgrind (apt-get install valgrind)")
        args.rounds = 1
    batsim = args.prefix / "bin" / "batsim"
    if not batsim.exists():
        raise SystemExit(f"{batsim} not found: build it with ../shared/batsim/build.sh")
    catalogue = schedulers(args.prefix)  # built once: names -> how to start each
    chosen = []
    for scheduler in (catalogue[name] for name in args.schedulers):
        if not scheduler.python:
            chosen.append(scheduler)
            continue
        chosen += [scheduler.under(label, path) for label, path in pythons]
    if args.callgrind:
        chosen = [replace(s, argv=(*CALLGRIND, *s.argv)) for s in chosen]
    args.workdir.mkdir(parents=True, exist_ok=True)
    command = shlex.join(argv or sys.argv[1:])
    lines = [f"# command: python bench/performance/serve_vs_batsched.py {command}",
             "# sched s = Batsim's scheduling_time (schedule.csv); cpu s = user+sys of the "
             "scheduler process (wait4), sys s its system part; wall s = whole run; "
             "x batsched = ours / batsched's same algorithm (easy_bf; fcfs for fcfs); "
             "x easy = / serve-easy. Batsim 4.2.1, "
             "batsched 1.4, pybatsim 3.2.1 from " + str(args.prefix)
             + ("; pinned: Batsim on CPU 0, the scheduler on CPU 1" if args.pin else "")
             + ("; over ipc:// (Unix sockets), not TCP" if args.ipc else "")]
    lines += [f"# python{'@' + label if label else ''}: {path}: {interpreter_facts(path)}"
              for label, path in pythons]
    began = time.perf_counter()
    for trace in args.traces:
        max_jobs = QUICK_JOBS if args.quick else args.max_jobs or DEFAULT_JOBS[trace]
        workload, platform, jobs = prepare(trace, max_jobs, args.workdir)
        results: dict[str, list[Run]] = defaultdict(list)
        for round_ in range(args.rounds):
            for s in chosen:
                run = run_once(batsim, s, workload, platform,
                               args.workdir / f"{trace}-r{round_}", args.timeout, args.pin,
                               args.ipc)
                results[s.name].append(run)
                print(f"[{time.perf_counter() - began:6.0f} s] {trace} round {round_ + 1}/"
                      f"{args.rounds} {s.name}: sched {run.scheduling_s:.2f} s, cpu "
                      f"{run.cpu_s:.2f} s (sys {run.sys_s:.2f}), wall {run.wall_s:.2f} s",
                      file=sys.stderr, flush=True)
        table = (instructions_report(trace, jobs, chosen, args.workdir / f"{trace}-r0")
                 if args.callgrind else report(trace, jobs, chosen, results))
        print("\n".join(table), flush=True)
        lines += ["", *table]
    if not args.no_save:
        path = write_results("serve_vs_batsched_instructions" if args.callgrind
                             else "serve_vs_batsched", lines, keep_earlier=True)
        print(f"saved {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
