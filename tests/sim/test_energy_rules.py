"""Energy's rules where Batsim refuses (platform properties, SET_RESOURCE_STATE, EXECUTE_JOB).

Batsim 4.2.1 ``server.cpp`` (``server_on_pstate_modification``, ``server_on_execute_job``)
and ``pstate.cpp``; SimGrid 3.32 ``host_energy.cpp`` for the properties. Platforms are
written here: two hosts, pstates 0 (100 flop/s, 100 W idle, 200 W all cores), 1 (sleep,
10 W), 2 (switch-off, 0.5 flop/s: 2 s at 50 W), 3 (switch-on, 0.25 flop/s: 4 s at 150 W).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from batpolicy.errors import InputError, InvalidDecision
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.power import host_power
from batpolicy.platforms.xml import read_platform
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.simulator import SimOptions, Simulator

WATTS = "100:200, 10:10, 50:50, 150:150"
SPEEDS = "100f, 1e-9f, 0.5f, 0.25f"


def platform_file(tmp_path: Path, watts: str = WATTS, sleep: str = "1:2:3") -> Path:
    path = tmp_path / "energy.xml"
    path.write_text(f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="z" routing="Full">
<host id="master_host" speed="1Gf"/>
<cluster id="c" prefix="h" suffix="" radical="0-1" speed="{SPEEDS}" bw="1GBps" lat="0">
  <prop id="wattage_per_state" value="{watts}"/>
  <prop id="wattage_off" value="5"/>
  <prop id="sleep_pstates" value="{sleep}"/>
</cluster></zone></platform>""")
    return path


def delay_jobs(*subtimes: float, delay: float = 10.0) -> Workload:
    jobs = [JobSpec(f"w0!{i}", subtime, 1, "d", None, {"id": i, "subtime": subtime, "res": 1,
                                                      "profile": "d"})
            for i, subtime in enumerate(subtimes)]
    return Workload("w0", jobs, {"d": {"type": "delay", "delay": delay}})


Decide = Callable[[t.Request], tuple[t.Decision, ...]]


def run(path: Path, workload: Workload, decide: Decide, *, energy: bool = True
        ) -> tuple[Simulator, list[t.Request]]:
    seen: list[t.Request] = []

    def scheduler(request: t.Request) -> t.Reply:
        seen.append(request)
        return t.Reply(request.now, decide(request))

    sim = Simulator([workload], read_platform(path), options=SimOptions(energy=energy))
    sim.run(scheduler)
    return sim, seen


def kinds(request: t.Request) -> set[type]:
    return {type(e) for e in request.events}


def test_malformed_properties_name_the_file_and_host(tmp_path: Path) -> None:
    bad = {"wattage_per_state": "100:x", "sleep_pstates": "1:2:3"}
    with pytest.raises(InputError, match=r"energy.xml.*host 'h0', pstate 0: 'x'"):
        host_power("h0", bad, [1.0], source=str(tmp_path / "energy.xml"))
    with pytest.raises(InputError, match="2 entries for 4 pstates"):
        host_power("h0", {"wattage_per_state": "1:2, 3:4"}, [1.0] * 4, source="p.xml")
    with pytest.raises(InputError, match="names pstate 7"):
        host_power("h0", {"wattage_per_state": WATTS, "sleep_pstates": "1:2:7"},
                   [1.0] * 4, source="p.xml")
    with pytest.raises(InputError, match="not 'sleep:switch_off:switch_on'"):
        host_power("h0", {"wattage_per_state": WATTS, "sleep_pstates": "1:2"}, [1.0] * 4)
    path = platform_file(tmp_path, watts="100:200, 10:10")
    with pytest.raises(InputError, match=r"energy.xml.*host 'h0'.*2 entries for 4 pstates"):
        run(path, delay_jobs(0.0), lambda r: ())


def test_sleep_and_wake_take_their_virtual_pstates_time_and_energy(tmp_path: Path) -> None:
    """Both hosts sleep at t=0 (2 s at 50 W), h0 wakes at 5 (4 s at 150 W), then runs."""
    def decide(request: t.Request) -> tuple[t.Decision, ...]:
        events = request.events
        if any(isinstance(e, t.SimulationBegins) for e in events):
            return (t.SetResourceState(MachineSet.of((0, 1)), "1"), t.CallMeLater(5.0))
        if any(isinstance(e, t.RequestedCall) for e in events):
            return (t.SetResourceState(MachineSet.of(0), "0"),
                    t.Query(None, {"consumed_energy": {}}))
        changed = [e for e in events if isinstance(e, t.ResourceStateChanged)]
        if changed and changed[0].state == "0":
            return (t.ExecuteJob("w0!0", MachineSet.of(0)),)
        return ()

    sim, seen = run(platform_file(tmp_path), delay_jobs(0.0), decide)
    changes = [(r.now, e.resources, e.state) for r in seen for e in r.events
               if isinstance(e, t.ResourceStateChanged)]
    assert changes == [(2.0, MachineSet.of((0, 1)), "1"), (9.0, MachineSet.of(0), "0")]
    answers = [e.data["consumed_energy"] for r in seen for e in r.events
               if isinstance(e, t.Answer)]
    assert answers == [pytest.approx(2 * 2 * 50 + 2 * 3 * 10)]  # at t=5
    result = sim.result()
    record = result.records[0]
    assert (record.start, record.finish) == (9.0, 19.0)
    assert record.consumed_energy == pytest.approx(10 * 100)  # a delay: the host idles
    # h0: sleep 2 s x 50, 3 s x 10, wake 4 s x 150, 10 s x 100; h1: 2 x 50 then 17 x 10
    assert result.consumed_joules == pytest.approx(100 + 30 + 600 + 1000 + 100 + 170)
    assert (result.nb_grouped_switches, result.nb_machine_switches) == (2, 3)


def test_execute_on_a_sleeping_or_switching_machine_is_refused(tmp_path: Path) -> None:
    def decide(request: t.Request) -> tuple[t.Decision, ...]:
        if any(isinstance(e, t.SimulationBegins) for e in request.events):
            return (t.SetResourceState(MachineSet.of(1), "1"),)
        if any(isinstance(e, t.JobSubmitted) for e in request.events):
            return (t.ExecuteJob("w0!0", MachineSet.of(1)),)
        return ()

    with pytest.raises(InvalidDecision, match="machine 1 cannot compute jobs now.*switching_off"):
        run(platform_file(tmp_path), delay_jobs(1.0), decide)
    with pytest.raises(InvalidDecision, match="machine 1 cannot compute jobs now.*sleeping"):
        run(platform_file(tmp_path), delay_jobs(3.0), decide)


@pytest.mark.parametrize(("second", "message"), [
    (t.SetResourceState(MachineSet.of(0), "7"), "machine 0 has no pstate 7"),
    (t.SetResourceState(MachineSet.of(0), "2"), "virtual transition pstate"),
    (t.SetResourceState(MachineSet.of(1), "1"), "machine 1 is still switching_off"),
    (t.SetResourceState(MachineSet.of(0), "1"), "machine 0 runs a job"),
])
def test_bad_switch_requests_are_refused(tmp_path: Path, second: t.Decision,
                                         message: str) -> None:
    def decide(request: t.Request) -> tuple[t.Decision, ...]:
        if any(isinstance(e, t.SimulationBegins) for e in request.events):
            return (t.SetResourceState(MachineSet.of(1), "1"),)
        if any(isinstance(e, t.JobSubmitted) for e in request.events):
            return (t.ExecuteJob("w0!0", MachineSet.of(0)), second)
        return ()

    with pytest.raises(InvalidDecision, match=message):
        run(platform_file(tmp_path), delay_jobs(1.0), decide)


def test_without_energy_set_resource_state_is_refused_and_jobs_csv_says_minus_one(
        tmp_path: Path) -> None:
    def switch(request: t.Request) -> tuple[t.Decision, ...]:
        if any(isinstance(e, t.SimulationBegins) for e in request.events):
            return (t.SetResourceState(MachineSet.of(1), "1"),)
        return ()

    with pytest.raises(InvalidDecision, match="without energy support"):
        run(platform_file(tmp_path), delay_jobs(1.0), switch, energy=False)

    def execute(request: t.Request) -> tuple[t.Decision, ...]:
        jobs = [e.job_id for e in request.events if isinstance(e, t.JobSubmitted)]
        return tuple(t.ExecuteJob(j, MachineSet.of(0)) for j in jobs)

    sim, _ = run(platform_file(tmp_path), delay_jobs(1.0), execute, energy=False)
    assert sim.parts.energy is None
    assert sim.result().records[0].consumed_energy == -1.0
