"""Live: real Batsim 4.2.1 + pybatsim, then the same scheduler in-process; same jobs.csv.

Needs real Batsim and pybatsim, built outside the repository (skipped when
absent, before any process starts). The whole matrix (every bundled scheduler, every
shared workload, whole KTH-SP2) is ``bench/performance/pybatsim_inprocess.py fidelity``; here, the
cases not covered by the recorded transcripts: composed profiles, same-instant
submissions, a small platform.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from batpolicy.app import cli

from clirun import free_port, restore_logging  # noqa: F401
from conftest import SHARED_DATA

pytestmark = [pytest.mark.batsim, pytest.mark.usefixtures("pybatsim")]

#: A zero-latency cluster of N machines: Batsim's message timing is then the simulator's.
PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="AS0" routing="Full">
<cluster id="c" prefix="h" suffix="" radical="0-{last}" speed="1Gf" bw="100GBps" lat="0us"
 bb_bw="1000GBps" bb_lat="0us" loopback_bw="1000GBps" loopback_lat="0us" />
<cluster id="m" prefix="master_host" suffix="" radical="0-0" speed="1Gf" bw="100GBps" lat="0us"
 bb_bw="1000GBps" bb_lat="0us" loopback_bw="1000GBps" loopback_lat="0us">
<prop id="role" value="master" /></cluster>
<link id="backbone" bandwidth="1000GBps" latency="0us" />
<zoneRoute src="c" dst="m" gw_src="hc_router" gw_dst="master_hostm_router">
<link_ctn id="backbone" /></zoneRoute></zone></platform>
"""


@pytest.mark.parametrize(("workload", "machines"), [("test_sequence_delay.json", 4),
                                                    ("test_same_submit_time.json", 1),
                                                    ("test_delays.json", 2)])
def test_easy_backfill_in_process_equals_real_batsim(workload: str, machines: int,
                                                     batsim_prefix: Path,
                                                     tmp_path: Path) -> None:
    path = SHARED_DATA / "batsim" / "workloads" / workload
    pybatsim = batsim_prefix / "venv" / "bin" / "pybatsim"
    if not path.is_file() or not pybatsim.is_file():
        pytest.skip(f"{path} or {pybatsim} not found")
    platform = tmp_path / "platform.xml"
    platform.write_text(PLATFORM.format(last=machines - 1))
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    scheduler = subprocess.Popen([str(pybatsim), "easyBackfill", "-s", endpoint, "-v",
                                  "warning", "-t", "60000"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
    try:
        batsim = subprocess.run([str(batsim_prefix / "bin" / "batsim"), "-p", str(platform),
                                 "-w", str(path), "-e", str(tmp_path / "real"), "-s", endpoint,
                                 "-q"], capture_output=True, text=True, timeout=120)
        assert batsim.returncode == 0, batsim.stderr[-2000:]
        assert scheduler.wait(timeout=30) == 0
    finally:
        scheduler.kill()
        scheduler.communicate()
    assert cli.main(["simulate", "--policy", "pybatsim:easyBackfill", "-w", str(path), "-p",
                     str(platform), "-e", str(tmp_path / "ours"), "--quiet"]) == 0
    real = (tmp_path / "real_jobs.csv").read_bytes()
    assert real.count(b"\n") > 1 and (tmp_path / "ours_jobs.csv").read_bytes() == real
