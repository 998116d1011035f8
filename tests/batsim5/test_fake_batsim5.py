"""``fake-batsim --batsim 5`` plays Batsim 5 for an EDC: the jobs real Batsim 5 gave.

The EDC is ``serve --batsim 5 --policy easy`` (in a thread); the reference is the
jobs.csv real Batsim 5 wrote beside the same daemon on the same inputs
(``tests/data/batsim5/serve-easy-walltime120.jobs.csv``). Our writer keeps Batsim 4's
file names and its quoted empty metadata (``""``; Batsim 5 writes nothing there): every
other byte is Batsim 5's.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from batpolicy.app import cli
from batpolicy.errors import ProtocolError
from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.protocol.batprotocol.peer import Batsim5Peer
from batpolicy.protocol.wires import make_wire
from batpolicy.scheduler.daemon import ServeOptions, serve
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.state import ClusterState

from clirun import free_port, restore_logging  # noqa: F401

DATA = Path(__file__).resolve().parents[1] / "data" / "batsim5"


def _serve_in_thread(endpoint: str, policy: str, features: tuple[str, ...] = ()
                     ) -> tuple[threading.Thread, list[int]]:
    options = ServeOptions(endpoint=endpoint, timeout_s=30,
                           wire=make_wire("5", name=f"batpolicy {policy}", version="test",
                                          features=features))
    status: list[int] = []
    thread = threading.Thread(target=lambda: status.append(
        serve(Dispatcher(make_policy(policy), ClusterState(None)), options)))
    thread.start()
    return thread, status


def test_fake_batsim5_gives_real_batsim5_s_jobs(tmp_path: Path) -> None:
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    thread, status = _serve_in_thread(endpoint, "easy")
    try:
        code = cli.main(["fake-batsim", "--batsim", "5", "-s", endpoint, "--timeout", "30",
                         "-w", str(DATA / "inputs" / "walltime_mix_120.json"),
                         "-p", str(DATA / "inputs" / "zero_lat_cluster32.xml"),
                         "-e", str(tmp_path / "out"), "--quiet"])
    finally:
        thread.join(timeout=30)
    assert code == 0 and status == [0]
    ours = (tmp_path / "out_jobs.csv").read_text().replace(',""\n', ",\n")
    real = (DATA / "serve-easy-walltime120.jobs.csv").read_text()
    assert ours.count("\n") == 121 and ours == real


def test_the_edc_s_hello_features_become_batsim_flags() -> None:
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    thread, status = _serve_in_thread(endpoint, "fcfs", ("dynamic_registration",
                                                         "acknowledge_dynamic_jobs"))
    peer = Batsim5Peer(endpoint, timeout_s=10)
    try:
        flags = peer.open().batsim4_flags()
        assert peer.edc_name == "batpolicy fcfs"
        assert flags == {"enable_dynamic_jobs": True, "acknowledge_dynamic_jobs": True,
                         "enable_profile_reuse": False}
        # then the conversation opens and closes in order (a lone end is refused)
        machines = tuple(t.ResourceInfo(i, f"h{i}") for i in range(2))
        begins = t.SimulationBegins(0.0, 2, 2, 0, False, True, {}, machines, (), {}, {})
        assert peer(t.Request(0.0, (begins,))).decisions == ()
        assert peer(t.Request(1.0, (t.SimulationEnds(1.0),))).decisions == ()
    finally:
        peer.close()
        thread.join(timeout=10)
    assert status == [0]


def test_an_edc_that_does_not_say_hello_is_named(tmp_path: Path) -> None:
    import zmq

    endpoint = f"tcp://127.0.0.1:{free_port()}"
    context = zmq.Context()
    edc = context.socket(zmq.REP)
    edc.bind(endpoint)

    def answer() -> None:
        edc.recv()
        edc.send(b"")
        edc.recv()
        edc.send(b'{"now": 0.0, "events": []}\0')

    thread = threading.Thread(target=answer)
    thread.start()
    try:
        with pytest.raises(ProtocolError, match=r"answered BatsimHelloEvent with \[\]"):
            Batsim5Peer(endpoint, timeout_s=5).open()
    finally:
        thread.join(timeout=5)
        edc.close(linger=0)
        context.term()
