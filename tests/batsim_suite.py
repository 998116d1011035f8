"""Batsim 4.2.1's own test matrix, run on real Batsim and on ``batpolicy fake-batsim``.

Batsim's test suite (``test/`` in its source archive) is a pytest suite: ``conftest.py``
crosses platforms × workloads × algorithms (``pytest_generate_tests``), and each
``test_*.py`` builds a Batsim command and a scheduler command and hands both to
``robin`` (``helper.py``: ``RobinInstance``, ``run_robin``). This module enumerates that
matrix without robin, pandas or Redis: in a child process (:func:`enumerate_cases`) it
imports Batsim's ``conftest`` and test modules, expands every test function's
parametrisation as pytest would (``pytest_generate_tests`` plus ``pytest.mark.parametrize``),
and calls each test with ``RobinInstance.to_file`` recording the two commands instead of
running them. Each recorded :class:`Case` is then run twice (:func:`run_case`): the
scheduler command beside real Batsim, and beside ``batpolicy fake-batsim`` given the same
platform, workload and flags; :func:`compare` says whether both ended the same way and
gave the same jobs (state, allocation, start and finish within 1e-6 s), schedule.csv
counts, machine-state timelines and ``_schedule.trace`` (byte for byte once the job
colours, which Batsim draws at random, are masked: :func:`mask_colours`); with energy,
the same consumed energy (schedule.csv's consumed_joules, each job's consumed_energy and
every ``_consumed_energy.csv`` row's energy within :data:`ENERGY_TOLERANCE`, the rows'
times, kinds and wattmin equal) and the same ``_pstate_changes.csv``.

Used by ``tests/sim/test_batsim_testsuite.py`` (when Batsim is built) and
``bench/fidelity/batsim_testsuite.py`` (the whole matrix, a table in ``bench/results``).
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import tarfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

#: Batsim flags fake-batsim takes as they are (the rest make the case not applicable or
#: are refused by fake-batsim, which is then the compared outcome).
_PASSTHROUGH_FLAGS = {
    "--forward-profiles-on-submission", "--enable-dynamic-jobs", "--acknowledge-dynamic-jobs",
    "--enable-profile-reuse", "--energy", "-E", "--enable-compute-sharing",
}
_VALUE_FLAGS = {"--events", "--mmax", "--sched-cfg"}
#: Workloads whose profiles need SMPI (MPI traces replayed by SimGrid): not applicable.
_SMPI_WORKLOADS = ("test_smpi_", "test_walltime_smpi")
#: Batsim's test modules about energy (their cases are counted apart).
ENERGY_TESTS = ("test_energy::", "test_usage_trace::")
#: jobs.csv columns compared, and the tolerance on times (s).
JOB_COLUMNS = ("final_state", "allocated_resources", "success")
TIME_COLUMNS = ("starting_time", "finish_time")
TIME_EPSILON = 1e-6
#: schedule.csv columns compared.
SCHEDULE_COLUMNS = ("nb_jobs", "nb_jobs_finished", "nb_jobs_success", "nb_jobs_killed",
                    "nb_jobs_rejected", "nb_computing_machines", "makespan")


@dataclass(frozen=True)
class Case:
    """One recorded run of Batsim's test matrix: a test id and the commands robin gets."""

    test: str                     #: ``module::function[param-ids]``
    name: str                     #: Batsim's own ``test_name`` (its output folder's name)
    batcmd: str
    schedcmd: str
    expected_success: bool = True  #: what Batsim's test expects of robin

    @property
    def batsim_args(self) -> list[str]:
        """The Batsim command's arguments after ``batsim``."""
        return shlex.split(self.batcmd)[1:]

    @property
    def is_energy(self) -> bool:
        """An energy case (issue 34's): Batsim's energy tests, or run with ``--energy``."""
        return self.test.startswith(ENERGY_TESTS) or bool(
            {"--energy", "-E"} & set(self.batsim_args))

    def why_not_applicable(self) -> str | None:
        """Why the case cannot run on fake-batsim + a ZeroMQ scheduler, or None."""
        args = self.batsim_args
        if not self.schedcmd.startswith("batsched"):
            return "no batsched scheduler" if self.schedcmd else "no scheduler (--no-sched)"
        if "--enable-redis" in args:
            return "needs Redis"
        if "-W" in args:
            return "DAX workflow (-W)"
        workload = _option(args, "-w") or ""
        if any(s in Path(workload).name for s in _SMPI_WORKLOADS):
            return "SMPI profiles"
        return None


def _option(args: list[str], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args and args.index(flag) + 1 < len(args) \
        else None


# ---- enumeration (runs in a child process: Batsim's modules are named conftest, helper) --

def _enumerate_here(test_dir: Path, work_dir: Path) -> list[dict]:
    """Expand Batsim's test matrix in this process (see :func:`enumerate_cases`)."""
    import inspect
    import types

    import pytest

    pandas = types.ModuleType("pandas")
    pandas.set_option = lambda *a, **k: None  # type: ignore[attr-defined]

    def _no_results(*a, **k):
        raise RuntimeError("robin did not run: no outputs to read")

    pandas.read_csv = _no_results  # type: ignore[attr-defined]
    sys.modules["pandas"] = pandas
    sys.path.insert(0, str(test_dir))
    os.chdir(work_dir)
    import helper  # noqa: E402  (Batsim's)

    import conftest  # noqa: E402  (Batsim's)

    recorded: list[dict] = []

    def record(self, filename):
        recorded.append({"batcmd": self.batcmd, "schedcmd": self.schedcmd,
                         "name": Path(self.output_dir).name})
        helper.create_dir_rec_if_needed(os.path.dirname(filename))

    helper.RobinInstance.to_file = record
    helper.run_robin = lambda filename: subprocess.CompletedProcess(["robin"], 0)

    class Metafunc:
        def __init__(self, names):
            self.fixturenames = names
            self.params: dict[str, list] = {}
            self.config = types.SimpleNamespace(
                option=types.SimpleNamespace(with_valgrind=False))

        def parametrize(self, name, values, **_):
            self.params[name] = list(values)

    cases = []
    for path in sorted(test_dir.glob("test_*.py")):
        module = __import__(path.stem)
        for fname, func in sorted(vars(module).items()):
            if not (fname.startswith("test_") and inspect.isfunction(func)):
                continue
            names = list(inspect.signature(func).parameters)
            meta = Metafunc(names)
            conftest.pytest_generate_tests(meta)
            for mark in getattr(func, "pytestmark", []):
                if mark.name == "parametrize":
                    argnames, values = mark.args[0], mark.args[1]
                    argnames = [a.strip() for a in argnames.split(",")] \
                        if isinstance(argnames, str) else list(argnames)
                    if len(argnames) == 1:
                        meta.params[argnames[0]] = list(values)
                    else:  # tuples of several arguments: one combined axis
                        meta.params[",".join(argnames)] = list(values)
            axes = [(k, v) for k, v in meta.params.items()]
            for combo in itertools.product(*(v for _, v in axes)):
                kwargs = {}
                ids = []
                for (k, _), value in zip(axes, combo, strict=True):
                    if "," in k:
                        kwargs.update(zip(k.split(","), value, strict=True))
                    else:
                        kwargs[k] = value
                    ids.append(getattr(value, "name", str(value)))
                if set(kwargs) != set(names):
                    continue  # a fixture this enumeration does not provide
                before = len(recorded)
                try:
                    func(**kwargs)
                    outcome_ok = True
                except Exception as exc:  # noqa: BLE001 - Batsim's checks after robin
                    outcome_ok = "Bad robin success state" not in str(exc)
                for rec in recorded[before:]:
                    cases.append({**rec, "test": f"{path.stem}::{fname}[{'-'.join(ids)}]",
                                  "expected_success": outcome_ok})
            pytest  # noqa: B018 - imported so that pytest.mark works in Batsim's modules
    return cases


def enumerate_cases(test_dir: Path, work_dir: Path, python: str = sys.executable) -> list[Case]:
    """Every run of Batsim's test suite in ``test_dir``, expanded as pytest would.

    Runs in a child process (Batsim's modules are named ``conftest`` and ``helper``, and
    they write ``schedconf.json`` files under ``work_dir/test-out/<test_name>/``, which
    the scheduler commands read: keep ``work_dir`` while the cases run).
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(
        [python, __file__, "enumerate", str(test_dir), str(work_dir)],
        check=True, capture_output=True, text=True)
    return [Case(**c) for c in json.loads(out.stdout.splitlines()[-1])]


def batsim_test_dir(prefix: Path, archive: Path | None, into: Path) -> Path | None:
    """Batsim's ``test/`` folder: from the build's sources, else from the source archive."""
    built = prefix / "src" / "batsim" / "test"
    if (built / "conftest.py").is_file():
        return built
    if archive is None or not archive.is_file():
        return None
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    found = next(into.glob("*/test/conftest.py"), None)
    return found.parent if found else None


# ---- running one case -----------------------------------------------------------------

@dataclass
class Run:
    """One side of a case: how it ended and where its outputs are."""

    side: str                      #: "batsim" or "fake"
    prefix: Path                   #: the ``-e`` export prefix
    simulator_rc: int | None = None
    scheduler_rc: int | None = None
    error: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Both processes exited 0."""
        return self.simulator_rc == 0 and self.scheduler_rc == 0

    def outcome(self) -> str:
        """``ok`` or a short reason, for the table."""
        if self.ok:
            return "ok"
        return self.error or f"rc sim={self.simulator_rc} sched={self.scheduler_rc}"


def free_port() -> int:
    """A TCP port free on localhost now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fake_batsim_args(case: Case, prefix: Path) -> list[str]:
    """fake-batsim's arguments for the case's Batsim command (same inputs and flags)."""
    args = case.batsim_args
    out = ["-p", _option(args, "-p") or "", "-w", _option(args, "-w") or "",
           "-e", str(prefix), "--no-progress", "-q"]
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-p", "-w", "-e"):
            i += 2
            continue
        if a in _VALUE_FLAGS:
            out += [a, args[i + 1]]
            i += 2
            continue
        out.append(a)  # passthrough or unknown: fake-batsim accepts or refuses it
        i += 1
    return out


def run_case(case: Case, side: str, out_dir: Path, *, batsim_prefix: Path,
             python: str = sys.executable, timeout: float = 60.0) -> Run:
    """Run the case's scheduler beside real Batsim (``side="batsim"``) or fake-batsim."""
    out_dir.mkdir(parents=True, exist_ok=True)
    prefix = out_dir / "out"
    run = Run(side=side, prefix=prefix)
    port = free_port()
    sched = shlex.split(case.schedcmd)
    sched[0] = str(batsim_prefix / "bin" / sched[0])
    sched += ["-s", f"tcp://*:{port}"]
    if side == "batsim":
        sim = [str(batsim_prefix / "bin" / "batsim"), *case.batsim_args, "-s",
               f"tcp://localhost:{port}"]
        sim[sim.index("-e") + 1] = str(prefix)
    else:
        sim = [python, "-m", "batpolicy", "fake-batsim", *fake_batsim_args(case, prefix),
               "-s", f"tcp://localhost:{port}", "--timeout", str(timeout)]
    began = time.perf_counter()
    with open(out_dir / "scheduler.log", "wb") as slog, \
            open(out_dir / "simulator.log", "wb") as blog:
        sp = subprocess.Popen(sched, stdout=slog, stderr=subprocess.STDOUT)
        try:
            bp = subprocess.Popen(sim, stdout=blog, stderr=subprocess.STDOUT)
            deadline = began + timeout
            while bp.poll() is None and time.perf_counter() < deadline:
                if sp.poll() not in (None, 0):  # the scheduler died: Batsim would wait forever
                    try:
                        bp.wait(timeout=2)
                    except subprocess.TimeoutExpired:
                        run.error = "scheduler died, simulator waiting"
                    break
                time.sleep(0.05)
            if bp.poll() is None:
                bp.kill()
                bp.wait()
                run.error = run.error or "simulator timeout"
            run.simulator_rc = bp.returncode
            try:  # a scheduler whose simulator failed may wait for it forever
                run.scheduler_rc = sp.wait(timeout=10 if run.simulator_rc == 0 else 2)
            except subprocess.TimeoutExpired:
                run.error = run.error or "scheduler did not exit"
        finally:
            if sp.poll() is None:
                sp.kill()
                sp.wait()
    run.seconds = time.perf_counter() - began
    if run.simulator_rc and side == "fake" and not run.error:
        log = (out_dir / "simulator.log").read_text(errors="replace").strip().splitlines()
        run.error = (log[-1] if log else f"rc {run.simulator_rc}")[:160]
    return run


# ---- comparing the two sides ----------------------------------------------------------

def read_jobs(prefix: Path) -> dict[tuple[str, str], dict[str, str]] | None:
    """``<prefix>_jobs.csv`` by (workload, job id), or None when absent."""
    path = Path(f"{prefix}_jobs.csv")
    if not path.is_file():
        return None
    with open(path, newline="") as f:
        return {(r.get("workload_name", ""), r["job_id"]): r for r in csv.DictReader(f)}


def read_schedule(prefix: Path) -> dict[str, str] | None:
    """``<prefix>_schedule.csv``'s one row, or None when absent."""
    path = Path(f"{prefix}_schedule.csv")
    if not path.is_file():
        return None
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return rows[0] if rows else None


def read_machine_states(prefix: Path) -> list[tuple] | None:
    """``<prefix>_machine_states.csv`` as (time, counts...) rows, or None when absent."""
    path = Path(f"{prefix}_machine_states.csv")
    if not path.is_file():
        return None
    with open(path, newline="") as f:
        reader = csv.reader(f)
        next(reader, None)
        return [(round(float(r[0]), 6), *r[1:]) for r in reader if r]


#: Relative tolerance on energies (joules): issue 34's bound; ``exact_energy`` says whether
#: consumed_joules is also equal to its last printed digit.
ENERGY_TOLERANCE = 1e-3


def read_energy(prefix: Path) -> list[tuple[float, float, str, float]] | None:
    """``<prefix>_consumed_energy.csv`` as (time, energy, event_type, wattmin) rows, or None.

    ``epower`` is left out: over the zero-length intervals Batsim's clock advances by a
    few ulps between two events of one instant, which the simulator's clock does not.
    """
    path = Path(f"{prefix}_consumed_energy.csv")
    if not path.is_file():
        return None
    with open(path, newline="") as f:
        return [(float(r["time"]), float(r["energy"]), r["event_type"], float(r["wattmin"]))
                for r in csv.DictReader(f)]


def _close(x: float, y: float) -> bool:
    return abs(x - y) <= ENERGY_TOLERANCE * max(abs(x), abs(y), 1.0)


def compare_energy(real: Path, fake: Path, c: Comparison) -> None:
    """Fill ``c``'s energy fields from both sides' outputs (prefixes), when both wrote them."""
    ra, fa = read_energy(real), read_energy(fake)
    if ra is None or fa is None:
        return
    c.same_energy = len(ra) == len(fa)
    if not c.same_energy:
        c.diffs.append(f"consumed_energy.csv rows: {len(ra)} / {len(fa)}")
    for i, (a, b) in enumerate(zip(ra, fa, strict=False)):
        if abs(a[0] - b[0]) > TIME_EPSILON or a[2] != b[2] or abs(a[3] - b[3]) > 1e-6 \
                or not _close(a[1], b[1]):
            c.same_energy = False
            c.diffs.append(f"consumed_energy.csv row {i + 1}: {a} / {b}")
            break
    rs, fs = read_schedule(real), read_schedule(fake)
    if rs is not None and fs is not None:
        x, y = rs.get("consumed_joules", "0"), fs.get("consumed_joules", "0")
        c.exact_energy = x == y
        if not _close(float(x), float(y)):
            c.same_energy = False
            c.diffs.append(f"schedule consumed_joules: {x} / {y}")
    rj, fj = read_jobs(real) or {}, read_jobs(fake) or {}
    for key in sorted(set(rj) & set(fj)):
        x, y = rj[key].get("consumed_energy") or "-1", fj[key].get("consumed_energy") or "-1"
        if not _close(float(x), float(y)):
            c.same_energy = False
            c.diffs.append(f"job {key[1]} consumed_energy: {x} / {y}")
    c.identical_energy_csv = Path(f"{real}_consumed_energy.csv").read_bytes() == Path(
        f"{fake}_consumed_energy.csv").read_bytes()
    rp, fp = Path(f"{real}_pstate_changes.csv"), Path(f"{fake}_pstate_changes.csv")
    if rp.is_file() and fp.is_file():
        c.same_pstates = rp.read_text() == fp.read_text()
        if not c.same_pstates:
            c.diffs.append("pstate_changes.csv differ")


@dataclass
class Comparison:
    """What differs between real Batsim's run and fake-batsim's, for one case."""

    same_outcome: bool
    both_ok: bool
    same_jobs: bool | None = None          #: None when not both ended cleanly
    same_schedule: bool | None = None
    same_machine_states: bool | None = None  #: None when either side did not write it
    same_energy: bool | None = None   #: None without energy outputs on both sides
    exact_energy: bool | None = None  #: consumed_joules equal to the printed digit
    identical_energy_csv: bool | None = None  #: _consumed_energy.csv byte for byte
    identical_machine_states: bool | None = None  #: _machine_states.csv byte for byte
    #: _schedule.trace byte for byte once job colours are masked (:func:`mask_colours`),
    #: None when either side did not write it
    identical_schedule_trace: bool | None = None
    same_pstates: bool | None = None
    diffs: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """One word for the table."""
        if not self.same_outcome:
            return "OUTCOME"
        if not self.both_ok:
            return "same-fail"
        if not self.same_jobs:
            return "JOBS"
        if self.same_schedule is False:
            return "SCHEDULE"
        if self.same_machine_states is False:
            return "MSTATES"
        if self.same_energy is False:
            return "ENERGY"
        if self.same_pstates is False:
            return "PSTATES"
        return "same"


def compare(real: Run, fake: Run) -> Comparison:
    """Compare two runs of one case (see the module docstring for what counts)."""
    c = Comparison(same_outcome=real.ok == fake.ok, both_ok=real.ok and fake.ok)
    if not c.both_ok:
        if not c.same_outcome:
            c.diffs.append(f"batsim {real.outcome()} / fake {fake.outcome()}")
        return c
    rj, fj = read_jobs(real.prefix), read_jobs(fake.prefix)
    if rj is None or fj is None:
        c.same_jobs = False
        c.diffs.append("jobs.csv missing")
        return c
    c.same_jobs = True
    if set(rj) != set(fj):
        c.same_jobs = False
        c.diffs.append(f"job ids differ: {sorted(set(rj) ^ set(fj))[:5]}")
    for key in sorted(set(rj) & set(fj)):
        a, b = rj[key], fj[key]
        for col in JOB_COLUMNS:
            if a.get(col) != b.get(col):
                c.same_jobs = False
                c.diffs.append(f"job {key[1]} {col}: {a.get(col)} / {b.get(col)}")
        for col in TIME_COLUMNS:
            if abs(float(a.get(col) or 0) - float(b.get(col) or 0)) > TIME_EPSILON:
                c.same_jobs = False
                c.diffs.append(f"job {key[1]} {col}: {a.get(col)} / {b.get(col)}")
    rs, fs = read_schedule(real.prefix), read_schedule(fake.prefix)
    if rs is not None and fs is not None:
        c.same_schedule = True
        for col in SCHEDULE_COLUMNS:
            x, y = rs.get(col), fs.get(col)
            if x is None or y is None:
                continue
            if abs(float(x) - float(y)) > TIME_EPSILON * max(1.0, abs(float(x))):
                c.same_schedule = False
                c.diffs.append(f"schedule {col}: {x} / {y}")
    rm, fm = read_machine_states(real.prefix), read_machine_states(fake.prefix)
    if rm is not None and fm is not None:
        c.same_machine_states = rm == fm
        c.identical_machine_states = Path(f"{real.prefix}_machine_states.csv").read_bytes() \
            == Path(f"{fake.prefix}_machine_states.csv").read_bytes()
        if rm != fm:
            c.diffs.append("machine_states differ")
    compare_schedule_trace(real.prefix, fake.prefix, c)
    compare_energy(real.prefix, fake.prefix, c)
    return c


_COLOUR = re.compile(r'^(5 j.* machine_state ".*") "[0-9.]+ [0-9.]+ [0-9.]+"$', re.MULTILINE)


def mask_colours(trace: str) -> str:
    """``trace`` with each job's colour replaced by ``"colour"``.

    Batsim shuffles its 64 job colours with an unseeded ``std::random_device``
    (``PajeTracer::shuffle_colors``): two Batsim runs colour jobs differently.

    >>> mask_colours('5 jw0!1 machine_state "w0!1" "1.000000 0.562500 0.000000"')
    '5 jw0!1 machine_state "w0!1" "colour"'
    """
    return _COLOUR.sub(r'\1 "colour"', trace)


def compare_schedule_trace(real: Path, fake: Path, c: Comparison) -> None:
    """Fill ``c.identical_schedule_trace`` when both sides wrote ``_schedule.trace``."""
    rp, fp = Path(f"{real}_schedule.trace"), Path(f"{fake}_schedule.trace")
    if not (rp.is_file() and fp.is_file()):
        return
    ra, fa = mask_colours(rp.read_text()), mask_colours(fp.read_text())
    c.identical_schedule_trace = ra == fa
    if ra != fa:
        rl, fl = ra.splitlines(), fa.splitlines()
        i = next((i for i, (x, y) in enumerate(zip(rl, fl, strict=False)) if x != y),
                 min(len(rl), len(fl)))
        c.diffs.append(f"schedule.trace line {i + 1}: "
                       f"{rl[i] if i < len(rl) else 'EOF'} / {fl[i] if i < len(fl) else 'EOF'}")


def case_result(case: Case, root: Path, *, batsim_prefix: Path,
                python: str = sys.executable) -> dict:
    """Run both sides of a case under ``root/<case name>`` and compare: one table row."""
    why = case.why_not_applicable()
    row = {"test": case.test, "name": case.name, "applicable": why is None, "why": why or ""}
    if why:
        return row
    real = run_case(case, "batsim", root / case.name / "batsim", batsim_prefix=batsim_prefix)
    fake = run_case(case, "fake", root / case.name / "fake", batsim_prefix=batsim_prefix,
                    python=python)
    c = compare(real, fake)
    row.update(batsim=real.outcome(), fake=fake.outcome(), verdict=c.verdict,
               diffs=c.diffs[:6], batsim_s=round(real.seconds, 2),
               fake_s=round(fake.seconds, 2), energy=case.is_energy, comparison=asdict(c))
    return row


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "enumerate":
        print(json.dumps(_enumerate_here(Path(sys.argv[2]), Path(sys.argv[3]))))
    else:
        sys.exit("usage: batsim_suite.py enumerate TEST_DIR WORK_DIR")
