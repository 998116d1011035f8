"""Run real Batsim 5 with one of its own EDC libraries, or beside ``batpolicy serve --batsim 5``.

Used by the live tests (``test_beside_batsim5.py``) and, as a script, to record the
conversations vendored in ``tests/data/batsim5/`` and to print the comparison figures::

    python tests/batsim5/live.py compare            # every case: same jobs.csv?
    python tests/batsim5/live.py record OUT_DIR     # the vendored conversations

Batsim 5 is looked for under ``$BATSIM5_PREFIX`` (default ``/opt/batsim5-snapshot``,
where ``docker/batsim5/build.sh`` installs it), its EDC libraries under
``$BATSIM5_PREFIX/lib``. With ``<json-format-bool>`` 1 and the default ``info`` verbosity,
Batsim logs every message it sends (``Sending '...'``) and receives (``Received '...'``)
in full (``src/server.cpp``, ``finish_message_and_call_edc``): that log is the
conversation, whichever EDC answered.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PREFIX = Path(os.environ.get("BATSIM5_PREFIX", "/opt/batsim5-snapshot"))
REPO = Path(__file__).resolve().parents[2]
#: The shared data folder: a sibling of the repository, or ``$BATPOLICY_SHARED_DATA``.
SHARED = Path(os.environ.get("BATPOLICY_SHARED_DATA", REPO.parent / "shared" / "data"))
INPUTS = SHARED / "transcripts" / "inputs"
VENDORED = REPO / "tests" / "data" / "batsim5"

#: (name, workload, platform, extra Batsim options): the shared workloads of the Batsim 4
#: transcripts (``../shared/data/transcripts/README.md``), on their zero-latency platforms.
CASES = {
    "paper800": ("test_batsim_paper_workload_seed1.json", "zero_lat_cluster32.xml", ()),
    "hpc250": ("example_workload_hpc_seed1_jobs250.json", "zero_lat_cluster128.xml", ()),
    "walltime120": ("walltime_mix_120.json", "zero_lat_cluster32.xml", ()),
    "samesubmit": ("test_same_submit_time.json", "zero_lat_cluster32.xml", ("--mmax", "1")),
}
#: Batsim 5's example EDC libraries, by the EDC's algorithm.
EDCS = {"easy": "libeasy.so", "fcfs": "libfcfs.so"}
#: The batpolicy policy taking each example EDC's decisions.
SAME_AS_EDC = {"easy": "easy-edc5", "fcfs": "fcfs"}

_LOG_LINE = re.compile(r"\] \[server/INFO\] (Sending|Received) '(.*)'$")


@dataclass
class Run:
    """One finished Batsim 5 run."""

    returncode: int
    out: Path
    stderr: str

    @property
    def jobs_csv(self) -> bytes:
        """Batsim's jobs.csv (empty if it wrote none)."""
        path = self.out / "jobs.csv"
        return path.read_bytes() if path.is_file() else b""

    def conversation(self) -> list[dict[str, object]]:
        """The exchanges Batsim logged: ``{"batsim": ..., "edc": ...}`` in order."""
        return list(conversation(self.stderr))


def conversation(log: str) -> Iterator[dict[str, object]]:
    """Pair Batsim's ``Sending``/``Received`` log lines into exchanges."""
    pending = None
    for line in log.splitlines():
        match = _LOG_LINE.search(line)
        if match is None:
            continue
        message = json.loads(match.group(2))
        if match.group(1) == "Sending":
            pending = message
        else:
            yield {"batsim": pending, "edc": message}
            pending = None


def available() -> bool:
    """True when Batsim 5 and its EASY and FCFS EDC libraries are installed."""
    return (PREFIX / "bin" / "batsim").is_file() and all(
        (PREFIX / "lib" / lib).is_file() for lib in EDCS.values())


def free_port() -> int:
    """A TCP port free right now on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@functools.cache
def is_rc2() -> bool:
    """True for a v5.0.0-rc2 build: its EDC options take no ``<json-format-bool>``."""
    usage = subprocess.run([str(PREFIX / "bin" / "batsim"), "--help"], capture_output=True,
                           text=True, timeout=60).stdout
    return "<json-format-bool>" not in usage


def rc2_workload(path: Path, out: Path) -> Path:
    """``path`` in rc2's workload format (delay profiles only).

    rc2 names profile types after batprotocol's tables: ``delay`` is ``DelayProfile``
    (rc2's ``workloads/``).
    """
    workload = json.loads(path.read_text())
    for name, profile in workload["profiles"].items():
        if profile.get("type") != "delay":
            raise ValueError(f"{path}: profile {name} is not a delay profile")
        profile["type"] = "DelayProfile"
    converted = out.parent / f"{out.name}-{path.name}"
    converted.write_text(json.dumps(workload))
    return converted


def batsim_args(case: str, out: Path) -> list[str]:
    """Batsim 5's command line for ``case``, without the EDC."""
    workload, platform, extra = CASES[case]
    path = INPUTS / workload
    if is_rc2():
        out.parent.mkdir(parents=True, exist_ok=True)
        path = rc2_workload(path, out)
    return [str(PREFIX / "bin" / "batsim"), "-p", str(INPUTS / platform), "-w",
            str(path), "-e", f"{out}/", *extra]


def edc_args(option: str, target: str) -> list[str]:
    """An EDC on Batsim's command line, speaking JSON (rc2: the EDC's init data says so)."""
    if is_rc2():
        return [option, target, '{"format_json": true}' if "library" in option else ""]
    return [option, target, "1", ""]


def run_library(case: str, policy: str, out: Path) -> Run:
    """Batsim 5 with its own EDC library for ``policy``, in JSON (so the log is the talk)."""
    edc = edc_args("--edc-library-str", str(PREFIX / "lib" / EDCS[policy]))
    proc = subprocess.run([*batsim_args(case, out), *edc], capture_output=True, text=True,
                          timeout=600)
    return Run(proc.returncode, out, proc.stderr)


def run_beside(case: str, policy: str, out: Path, *, record: Path | None = None) -> Run:
    """Batsim 5 beside ``batpolicy serve --batsim 5 --policy POLICY`` over ZeroMQ."""
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    serve = [sys.executable, "-m", "batpolicy", "serve", "--batsim", "5", "--policy", policy,
             "-s", endpoint, "--timeout", "120"]
    if record is not None:
        serve += ["--record", str(record)]
    daemon = subprocess.Popen(serve, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        proc = subprocess.run([*batsim_args(case, out), *edc_args("--edc-socket-str", endpoint)],
                              capture_output=True, text=True, timeout=600)
        try:
            _, daemon_err = daemon.communicate(timeout=30 if proc.returncode == 0 else 1)
        except subprocess.TimeoutExpired:
            daemon.kill()
            _, daemon_err = daemon.communicate()
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.communicate()
    code = proc.returncode or daemon.returncode
    return Run(code, out, proc.stderr + "\n--- batpolicy ---\n" + daemon_err)


def starts_differ(a: bytes, b: bytes) -> tuple[int, str]:
    """How many jobs start at another time in ``b`` than in ``a``, and both mean waits."""
    def starts(data: bytes) -> dict[str, tuple[str, float]]:
        rows = list(csv.DictReader(io.StringIO(data.decode())))
        return {r["job_id"]: (r["starting_time"], float(r["waiting_time"] or 0)) for r in rows}
    sa, sb = starts(a), starts(b)
    moved = sum(1 for job, (start, _) in sa.items() if sb.get(job, ("", 0))[0] != start)
    mean = [sum(w for _, w in s.values()) / max(1, len(s)) for s in (sa, sb)]
    return moved, f"{mean[0]:.2f}/{mean[1]:.2f}"


def compare(cases: list[str]) -> int:
    """Print, per case and policy, whether serve's jobs.csv is the EDC's; 0 if all are."""
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            for lib, policy in SAME_AS_EDC.items():
                edc = run_library(case, lib, Path(tmp) / f"{case}-{policy}-edc")
                ours = run_beside(case, policy, Path(tmp) / f"{case}-{policy}-serve")
                same = edc.returncode == ours.returncode == 0 and edc.jobs_csv == ours.jobs_csv
                failures += not same
                rows = edc.jobs_csv.count(b"\n") - 1
                moved, waits = starts_differ(edc.jobs_csv, ours.jobs_csv)
                print(f"{case:12} {policy:13} jobs={rows:4} edc_rc={edc.returncode} "
                      f"serve_rc={ours.returncode} same_jobs_csv={same} "
                      f"jobs_started_elsewhen={moved} mean_wait_edc/serve={waits}")
    return 1 if failures else 0


def record(out_dir: Path, cases: list[str]) -> None:
    """Write the conversations of Batsim 5's own EDCs and of ``serve --batsim 5``.

    ``edc-POLICY-CASE.jsonl`` and ``serve-POLICY-CASE.jsonl``: one exchange a line,
    hellos included, with the jobs.csv Batsim wrote.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            for policy in EDCS:
                for who, runner in (("edc", run_library), ("serve", run_beside)):
                    run = runner(case, policy, Path(tmp) / f"{who}-{policy}-{case}")
                    if run.returncode != 0:
                        raise SystemExit(f"{who} {policy} {case}: failed\n{run.stderr[-2000:]}")
                    lines = [json.dumps(_portable(x), separators=(",", ":"))
                             for x in conversation(run.stderr)]
                    name = f"{who}-{policy}-{case}"
                    (out_dir / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
                    (out_dir / f"{name}.jobs.csv").write_bytes(run.jobs_csv)


def _portable(exchange: dict[str, object]) -> dict[str, object]:
    """An exchange without this machine's paths (inputs become ``/path/to/inputs/FILE``)."""
    text = json.dumps(exchange)
    text = text.replace(str(INPUTS), "/path/to/inputs").replace(str(PREFIX), "/path/to/batsim5")
    text = re.sub(r'"(-e|--export)", "[^"]*"', r'"\1", "out/"', text)
    text = re.sub(r'\\"export_prefix\\":\\"[^"\\]*\\"', r'\\"export_prefix\\":\\"out/\\"', text)
    return json.loads(text)


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "compare"
    if not available():
        raise SystemExit(f"Batsim 5 with its EDC libraries not found under {PREFIX}")
    if command == "compare":
        raise SystemExit(compare(sys.argv[2:] or list(CASES)))
    if command == "record":
        record(Path(sys.argv[2]), sys.argv[3:] or ["walltime120", "samesubmit"])
    else:
        raise SystemExit(f"unknown command {command!r} (compare or record)")
