"""One platform view from a SimGrid file and from SIMULATION_BEGINS, as Batsim 4.2.1 sends it.

``data/batsim421_begins.json.gz`` holds the machines (``compute_resources``,
``storage_resources``) of the SIMULATION_BEGINS that real Batsim 4.2.1 sent for every
shared platform it loads, recorded with ``batpolicy serve --record`` beside
``batsim -p PLATFORM -w (one delay job)``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from batpolicy.errors import ConfigError, InputError, ProtocolError
from batpolicy.platforms.begins import platform_from_begins
from batpolicy.platforms.model import Platform
from batpolicy.platforms.xml import read_platform
from batpolicy.protocol import types as t
from batpolicy.scheduler.state import ClusterState

from clirun import restore_logging  # noqa: F401  (autouse fixture)
from conftest import SHARED_DATA
from platform_views import forwarded, simulator_begins, summary

REAL = json.loads(gzip.decompress((Path(__file__).parent / "data"
                                   / "batsim421_begins.json.gz").read_bytes()))
SHARED_PLATFORMS = {p.name: p for folder in ("batsim/platforms", "transcripts/inputs")
                    for p in sorted((SHARED_DATA / folder).glob("*.xml"))}


def _shared(name: str) -> Path:
    if name not in SHARED_PLATFORMS:
        pytest.skip(f"shared platform {name} not found under {SHARED_DATA}")
    return SHARED_PLATFORMS[name]


def _begins(resources: list[dict], storage: list[dict] = ()) -> t.SimulationBegins:
    def info(r: dict) -> t.ResourceInfo:
        return t.ResourceInfo(r["id"], r["name"], r["state"], r["properties"],
                              r["zone_properties"])

    return t.SimulationBegins(0.0, len(resources) + len(storage), len(resources), len(storage),
                              False, True, {}, tuple(map(info, resources)),
                              tuple(map(info, storage)), {}, {})


@pytest.mark.parametrize("name", sorted(REAL))
def test_reader_forwards_what_real_batsim_forwards(name: str) -> None:
    platform = read_platform(_shared(name))
    real = REAL[name]
    assert forwarded(platform) == [(r["name"], r["properties"], r["zone_properties"])
                                   for r in real["compute_resources"] + real["storage_resources"]]
    assert [m.id for m in platform.storage] == [r["id"] for r in real["storage_resources"]]


@pytest.mark.parametrize("name", sorted(REAL))
def test_view_from_begins_equals_the_files(name: str) -> None:
    from_file = read_platform(_shared(name))
    sim = simulator_begins(from_file)
    real = REAL[name]
    # the embedded simulator announces the machines exactly as Batsim 4.2.1 does
    assert [(r.id, r.name, r.state, r.properties, r.zone_properties)
            for r in sim.compute_resources + sim.storage_resources] == [
        (r["id"], r["name"], r["state"], r["properties"], r["zone_properties"])
        for r in real["compute_resources"] + real["storage_resources"]]
    assert (sim.nb_compute_resources, sim.nb_storage_resources) == (
        len(real["compute_resources"]), len(real["storage_resources"]))
    assert platform_from_begins(sim, reference=from_file) == from_file
    from_batsim = _begins(real["compute_resources"], real["storage_resources"])
    assert platform_from_begins(from_batsim, reference=from_file) == from_file
    # without the file, what Batsim forwards is all there is: the same from both messages
    assert platform_from_begins(sim) == platform_from_begins(from_batsim)


def test_heterogeneous_platform_policy_sees_the_speeds_the_simulator_runs() -> None:
    from_file = read_platform(_shared("heterogeneous_platform.xml"))
    state = ClusterState(platform_file=from_file)
    state.apply(simulator_begins(from_file))
    speeds = {r.name: r.speed for r in state.resources}
    assert speeds["cor_0_example_cpu_0_example_node_0_clu_0"] == 1e10
    assert speeds["cor_0_example_gpu_0_example_node_0_clu_0"] == 1e9
    assert [state.platform.speed(i) for i in range(state.nb_machines)] == [
        m.speed for m in from_file.machines]
    assert summary(state.platform) == summary(from_file)
    assert {g.name: g.uplink_bandwidth for g in from_file.groups.values()} == {
        "clu_0": 1.25e9, "clu_1": 1.25e9}  # the tomh_clu_* links to the master


def test_zone_properties_accumulate_and_cluster_props_are_both(tmp_path: Path) -> None:
    """The rules real Batsim 4.2.1 showed on properties_example.xml and nested zones."""
    path = tmp_path / "p.xml"
    path.write_text("""<?xml version='1.0'?>
<platform version="4.1"><zone id="AS0" routing="Full"><prop id="top" value="1"/>
  <zone id="inner" routing="Cluster"><prop id="top" value="2"/><prop id="in" value="x"/>
    <cabinet id="cab" prefix="a" suffix="" speed="3Gf" bw="1Gbps" lat="0" radical="1-2"/>
    <host id="h" speed="1Gf"><prop id="role" value=""/><prop id="gpu" value="yes"/></host>
  </zone>
  <cluster id="c" prefix="n" suffix="" radical="0-1" speed="2Gf" bw="1GBps" lat="0">
    <prop id="k" value="v"/></cluster>
  <host id="master_host" speed="1Gf"/>
</zone></platform>""")
    platform = read_platform(path)
    assert forwarded(platform) == [
        ("a1", {"role": ""}, {"top": "2", "in": "x"}),
        ("a2", {"role": ""}, {"top": "2", "in": "x"}),
        ("h", {"role": "", "gpu": "yes"}, {"top": "2", "in": "x"}),
        ("n0", {"role": "", "k": "v"}, {"top": "1", "k": "v"}),
        ("n1", {"role": "", "k": "v"}, {"top": "1", "k": "v"})]
    assert summary(platform) == {"inner": ("cluster", "0-2", None, {3e9, 1e9}, {False, True}),
                                 "c": ("cluster", "3-4", None, {2e9}, {False})}
    assert platform.machines[0].rack == "cab" and platform.groups["c"].properties == {
        "top": "1", "k": "v"}


def test_props_state_facts_without_the_file() -> None:
    begins = _begins([
        {"id": 0, "name": "a", "state": "idle", "zone_properties": {"group": "r0"},
         "properties": {"role": "", "speed": "2.5Gf", "gpu": "1", "group_kind": "rack"}},
        {"id": 1, "name": "b", "state": "idle", "properties": {"role": "", "cluster": "c1"},
         "zone_properties": {"uplink_bandwidth": "8Mbps", "uplink_latency": "5ms"}},
        {"id": 2, "name": "c", "state": "idle", "properties": {}, "zone_properties": {}}])
    platform = platform_from_begins(begins)
    assert [(m.speed, m.gpu, m.group, m.cluster, m.rack) for m in platform.machines] == [
        (2.5e9, True, "r0", None, "r0"), (1e9, False, "c1", "c1", None),
        (1e9, False, None, None, None)]
    assert (platform.groups["c1"].uplink_bandwidth, platform.groups["c1"].uplink_latency) == (
        1e6, 0.005)
    assert platform.group_of(2) is None and platform.speed(0) == 2.5e9


@pytest.mark.parametrize(("props", "needle"), [
    ({"speed": "fast"}, "machine 'a': property 'speed'"),
    ({"uplink_bandwidth": "1Gbs"}, "property 'uplink_bandwidth'"),
    ({"group": "g", "group_kind": "island"}, "'group_kind' is 'island'"),
])
def test_unreadable_props_are_a_protocol_error_naming_the_machine(props: dict,
                                                                  needle: str) -> None:
    begins = _begins([{"id": 0, "name": "a", "state": "idle", "properties": props,
                       "zone_properties": {}}])
    with pytest.raises(ProtocolError, match=needle):
        platform_from_begins(begins)


def test_a_group_with_two_uplinks_is_refused() -> None:
    begins = _begins([
        {"id": i, "name": n, "state": "idle", "zone_properties": {},
         "properties": {"group": "g", "uplink_bandwidth": bw}}
        for i, (n, bw) in enumerate([("a", "1Gbps"), ("b", "2Gbps")])])
    with pytest.raises(ProtocolError, match="group 'g': machine 'a'.*machine 'b'"):
        platform_from_begins(begins)


def test_a_platform_file_of_other_machines_is_refused() -> None:
    begins = _begins([{"id": 0, "name": "x", "state": "idle", "properties": {},
                       "zone_properties": {}}])
    with pytest.raises(ConfigError, match="resource 0 is 'x' in SIMULATION_BEGINS but 'h0'"):
        platform_from_begins(begins, reference=Platform.homogeneous(1))
    with pytest.raises(ConfigError, match="but 'absent'"):
        platform_from_begins(_begins([{"id": i, "name": f"h{i}", "state": "idle",
                                       "properties": {}, "zone_properties": {}}
                                      for i in range(2)]), reference=Platform.homogeneous(1))


def test_a_speed_prop_contradicting_the_host_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "p.xml"
    path.write_text('<platform version="4.1"><zone id="z" routing="Full">\n'
                    '<host id="h" speed="1Gf"><prop id="speed" value="2Gf"/></host>\n'
                    '<host id="master_host" speed="1Gf"/></zone></platform>')
    with pytest.raises(InputError, match="says 2e.09 flop/s but the host computes at 1e.09") \
            as err:
        read_platform(path)
    assert (err.value.line, err.value.field) == (2, "speed")


def _seen_platforms(monkeypatch: pytest.MonkeyPatch) -> list[Platform]:
    """The platform every ClusterState builds at SIMULATION_BEGINS from now on."""
    seen: list[Platform] = []
    original = ClusterState._on_begins

    def spy(self: ClusterState, event: t.SimulationBegins) -> None:
        original(self, event)
        seen.append(self.platform)

    monkeypatch.setattr(ClusterState, "_on_begins", spy)
    return seen


def test_simulate_gives_the_policy_the_files_speeds(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from batpolicy.app.cli import main

    path = _shared("heterogeneous_platform.xml")
    seen = _seen_platforms(monkeypatch)
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 15, "jobs": [
        {"id": "1", "subtime": 0, "res": 2, "profile": "d"}],
        "profiles": {"d": {"type": "delay", "delay": 3}}}))
    assert main(["simulate", "--policy", "fcfs", "-w", str(workload), "-p", str(path),
                 "-o", str(tmp_path / "out"), "--quiet"]) == 0
    assert seen == [read_platform(path)]
    assert {m.speed for m in seen[0].machines} == {1e9, 1e10}


def test_serve_platform_option_reads_the_file(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from batpolicy.app import cli

    captured: list[ClusterState] = []
    monkeypatch.setattr("batpolicy.scheduler.daemon.serve",
                        lambda dispatcher, options: captured.append(dispatcher.state) or 0)
    path = _shared("heterogeneous_platform.xml")
    assert cli.main(["serve", "--policy", "fcfs", "--platform", str(path)]) == 0
    assert captured[0].platform_file == read_platform(path)
    assert cli.main(["serve", "--platform", str(tmp_path / "none.xml")]) == 1
