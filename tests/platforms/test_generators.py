"""``batpolicy platform ...``: each file read back gives the intended groups and facts.

Groups, speeds, GPU flags and uplinks as asked; the view built from the embedded
simulator's SIMULATION_BEGINS equals the file's.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from batpolicy.app.cli import main
from batpolicy.errors import ConfigError, InputError
from batpolicy.platforms import generators as gen
from batpolicy.platforms.begins import platform_from_begins
from batpolicy.platforms.power import HostPower, SleepPState, host_power, pstate_speeds
from batpolicy.platforms.xml import read_platform
from batpolicy.scheduler.state import ClusterState

from clirun import restore_logging  # noqa: F401  (autouse fixture)
from platform_views import simulator_begins, summary

GBPS = 1e9 / 8


def _cli(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "p.xml"
    assert main(["platform", *args, "-o", str(out)]) == 0
    return out


def test_multicluster_four_clusters_of_100_nodes(tmp_path: Path) -> None:
    platform = read_platform(_cli(tmp_path, "multicluster", "--clusters", "4", "--nodes",
                                  "100", "--link-bandwidth", "1Gbps"))
    assert platform.nb_machines == 400
    assert summary(platform) == {
        f"cluster{c}": ("cluster", f"{100 * c}-{100 * c + 99}", GBPS, {1e9}, {False})
        for c in range(4)}
    assert {g.uplink_latency for g in platform.groups.values()} == {0.0}
    assert platform.group_of(250).name == "cluster2"
    assert platform.machines[250].cluster == "cluster2" and platform.machines[250].rack is None
    # the file's own links say the same: one uplink per cluster, as in Fig. 4
    assert {k: v.bandwidth for k, v in platform.links.items() if k.endswith("_uplink")} == {
        f"cluster{c}_uplink": GBPS for c in range(4)}


def test_twelve_clusters_keep_ids_contiguous_and_in_order(tmp_path: Path) -> None:
    platform = read_platform(_cli(tmp_path, "multicluster", "--clusters", "12", "--nodes",
                                  "11", "--speed", "2Gf", "--link-bandwidth", "125MBps",
                                  "--link-latency", "1ms"))
    assert list(platform.groups) == [f"cluster{c:02d}" for c in range(12)]
    for c, group in enumerate(platform.groups.values()):
        assert str(group.machines) == f"{11 * c}-{11 * c + 10}"
        assert (group.uplink_bandwidth, group.uplink_latency) == (125e6, 0.001)
    assert {m.speed for m in platform.machines} == {2e9}


def test_racks_with_a_gpu_rack(tmp_path: Path) -> None:
    platform = read_platform(_cli(tmp_path, "racks", "--racks", "4", "--nodes", "6",
                                  "--gpu-racks", "1"))
    assert summary(platform) == {
        "rack0": ("rack", "0-5", 10 * GBPS, {1e9}, {True}),
        "rack1": ("rack", "6-11", 10 * GBPS, {1e9}, {False}),
        "rack2": ("rack", "12-17", 10 * GBPS, {1e9}, {False}),
        "rack3": ("rack", "18-23", 10 * GBPS, {1e9}, {False})}
    assert platform.machines[7].rack == "rack1" and platform.machines[7].cluster is None


def test_machines_of_different_cpu_counts_and_speeds(tmp_path: Path) -> None:
    spec = tmp_path / "machines.csv"
    spec.write_text("name,cpus,speed,gpu\nzeta,4,2Gf,\nalpha,16,1Gf,no\n"
                    "mid,1,10Gf,yes\n\n")
    platform = read_platform(_cli(tmp_path, "machines", "--spec", str(spec)))
    # ids follow Batsim's order of host names: alpha_*, mid_*, zeta_*
    assert summary(platform) == {
        "alpha": ("machine", "0-15", 10 * GBPS, {1e9}, {False}),
        "mid": ("machine", "16", 10 * GBPS, {1e10}, {True}),
        "zeta": ("machine", "17-20", 10 * GBPS, {2e9}, {False})}
    unnamed = tmp_path / "unnamed.csv"
    unnamed.write_text("cpus,speed\n" + "2,1Gf\n" * 11)
    platform = read_platform(_cli(tmp_path, "machines", "--spec", str(unnamed)))
    assert list(platform.groups) == [f"m{i:02d}" for i in range(11)]


def test_machines_of_a_preset_are_those_its_workload_was_drawn_for(tmp_path: Path) -> None:
    """``--preset tabu-4 --seed S``: the hosts, speeds and machines of ``grid_platform``."""
    from dataclasses import replace

    from batpolicy.io.deadline_grid import TABU4, grid_platform

    drawn = grid_platform(replace(TABU4, nb_machines=12), 5)
    platform = read_platform(_cli(tmp_path, "machines", "--preset", "tabu-4", "--seed", "5",
                                  "--param", "nb_machines=12"))
    assert [m.speed for m in platform.machines] == [m.speed for m in drawn.machines]
    by_group = {}
    for m in drawn.machines:
        by_group.setdefault(m.properties["group"], []).append(m.id)
    assert [list(g.machines) for g in platform.groups.values()] == list(by_group.values())


@pytest.mark.parametrize("groups", [
    gen.multicluster(3, 4, link_bandwidth="250Mbps", link_latency="2us"),
    gen.racks(5, 2, gpu_racks=2, speed="3.5Gf"),
    gen.machines([(None, 3, "2Gf", False), ("b.1", 1, "1e9", True), ("b", 2, "500Mf", False)]),
])
def test_view_from_the_simulators_begins_equals_the_files(tmp_path: Path,
                                                          groups: list[gen.GroupSpec]) -> None:
    from_file = read_platform(gen.write_platform(groups, tmp_path / "p.xml"))
    begins = simulator_begins(from_file)
    assert platform_from_begins(begins) == from_file  # no file needed: all facts are props
    assert len(from_file.groups) == len(groups)
    state = ClusterState()  # as under `serve` without --platform
    state.apply(begins)
    assert state.platform == from_file
    assert [(r.speed, r.gpu, r.cluster, r.rack) for r in state.resources] == [
        (m.speed, m.gpu, m.cluster, m.rack) for m in from_file.machines]


@pytest.mark.parametrize(("args", "needle"), [
    (["multicluster", "--clusters", "4", "--nodes", "10", "--link-bandwidth", "1Gbs"],
     "--link-bandwidth: not a SimGrid bandwidth: '1Gbs'"),
    (["multicluster", "--clusters", "0", "--nodes", "10"], "--clusters must be a positive"),
    (["racks", "--racks", "2", "--nodes", "3", "--gpu-racks", "3"], "--gpu-racks must be"),
    (["racks", "--racks", "2", "--nodes", "3", "--speed", "fast"], "--speed: not a SimGrid"),
    (["racks", "--racks", "2", "--nodes", "3", "--link-latency", "soon"], "--link-latency"),
    (["racks", "--racks", "2", "--nodes", "3", "--speed", "0Gf"],
     "--speed: a speed must be positive, got '0Gf'"),
    (["multicluster", "--clusters", "2", "--nodes", "3", "--speed", "0"],
     "--speed: a speed must be positive, got '0'"),
    (["machines"], "give --spec CSV or --preset NAME"),
    (["machines", "--preset", "uniform"], "drawn for no particular platform"),
    (["machines", "--preset", "tabu-4", "--param", "cpus=3"], "no such parameter"),
    (["machines", "--preset", "nope"], "unknown preset 'nope'"),
])
def test_bad_options_name_the_option(tmp_path: Path, args: list[str], needle: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["platform", *args, "-o", str(tmp_path / "p.xml")]) == 1
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert not (tmp_path / "p.xml").exists()


@pytest.mark.parametrize(("text", "line", "field", "needle"), [
    ("cpus\n4\n", 1, None, "missing column(s) speed"),
    ("cpus,speed\n4,2Gf\nfour,1Gf\n", 3, "cpus", "not a whole number"),
    ("cpus,speed\n0,2Gf\n", 2, "cpus", "at least one CPU"),
    ("cpus,speed\n2,2Gbps\n", 2, "speed", "not a SimGrid speed"),
    ("cpus,speed\n2,0f\n", 2, "speed", "positive"),
    ("cpus,speed,gpu\n2,1Gf,maybe\n", 2, "gpu", "yes/no"),
])
def test_bad_machine_list_names_file_line_and_column(tmp_path: Path, text: str, line: int,
                                                     field: str | None, needle: str) -> None:
    spec = tmp_path / "m.csv"
    spec.write_text(text)
    with pytest.raises(InputError) as err:
        gen.read_machines_csv(spec)
    assert (err.value.path, err.value.line, err.value.field) == (str(spec), line, field)
    assert needle in str(err.value)


def test_bad_group_names_are_refused() -> None:
    with pytest.raises(ConfigError, match="letters, digits"):
        gen.to_xml(gen.machines([("a_b", 1, "1Gf", False)]))
    with pytest.raises(ConfigError, match="used twice or reserved"):
        gen.to_xml(gen.machines([("a", 1, "1Gf", False), ("a", 2, "1Gf", False)]))
    with pytest.raises(ConfigError, match="no machine"):
        gen.machines([])


def test_every_generated_group_has_a_positive_speed() -> None:
    """The one writer checks it, whatever made the groups (e.g. a preset's machines)."""
    with pytest.raises(ConfigError, match="group 'fast': speed: a speed must be positive"):
        gen.to_xml([gen.GroupSpec("fast", "machine", 2, speed="0Gf")])


def test_simulate_on_a_platform_of_speed_zero_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 31 item 5: a platform file with speed 0 divided by zero in the speed model."""
    platform = _cli(tmp_path, "racks", "--racks", "2", "--nodes", "3")
    platform.write_text(platform.read_text().replace('"1Gf"', '"0Gf"'))
    assert main(["simulate", "-p", str(platform), "--job-model", "speed", "-o",
                 str(tmp_path / "out")]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if "ERROR" in line]
    assert errors == [f"batpolicy: ERROR: {platform}:13, field 'speed': host 'rack0_0' "
                      "computes at 0 flop/s: a compute host's speed must be positive"]


def test_the_docs_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/platforms.md: its commands, with its machines.csv, write what it says."""
    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "platforms.md").read_text()
    blocks = doc.split("```")[1::2]
    commands = [shlex.split(line, comments=True)[1:] for line in blocks[0].strip().splitlines()]
    spec = tmp_path / "docs" / "examples" / "inputs" / "machines.csv"
    spec.parent.mkdir(parents=True)
    spec.write_text((root / "docs" / "examples" / "inputs" / "machines.csv").read_text())
    monkeypatch.chdir(tmp_path)
    for command in commands:
        assert main(command) == 0, command
    out = tmp_path / "out"
    assert [read_platform(out / f).nb_machines for f in ("mc4.xml", "racks.xml",
                                                          "grid.xml")] == [400, 24, 22]
    assert read_platform(out / "grid.xml").groups["gpu1"].kind == "machine"


DATA = Path(__file__).resolve().parent / "data"


def test_without_power_options_the_files_are_byte_identical_to_before(tmp_path: Path) -> None:
    """The golden files were written by the generators before power existed."""
    assert _cli(tmp_path, "multicluster", "--clusters", "2", "--nodes", "3").read_text() == \
        (DATA / "multicluster_2x3.xml").read_text()
    assert gen.to_xml(gen.machines([(None, 2, "4Gf", False), ("gpu", 1, "1e10", True)])) == \
        (DATA / "machines_2.xml").read_text()


def _host_power(path: Path) -> list[HostPower]:
    platform = read_platform(path)
    speeds = pstate_speeds(path)
    return [host_power(m.name, m.properties, speeds[m.name][0], source=str(path))
            for m in platform.machines]


def test_power_platform_has_batsims_energy_node_by_default(tmp_path: Path) -> None:
    """--power: the figures of Batsim's cluster_energy_128.xml, as Batsim reads them."""
    hosts = _host_power(_cli(tmp_path, "racks", "--racks", "2", "--nodes", "3", "--speed",
                             "100Mf", "--power"))
    assert len(hosts) == 6
    h = hosts[0]
    assert all(other.speeds == h.speeds and other.all_cores == h.all_cores for other in hosts)
    assert h.speeds[0] == 1e8 and h.initial == 0
    assert (h.idle[0], h.all_cores[0], h.idle[1], h.off) == (95.0, 190.738, 9.75, 9.75)
    assert [h.kind(p).value for p in range(4)] == ["computation", "sleep", "transition",
                                                   "transition"]
    assert h.sleep[1] == SleepPState(1, 2, 3)
    # a switch computes one flop: its time is 1 / speed, its energy watts x time
    assert 1 / h.speeds[2] == pytest.approx(6.1) and 1 / h.speeds[3] == pytest.approx(151.52)
    assert h.all_cores[2] / h.speeds[2] == pytest.approx(616.08)
    assert h.all_cores[3] / h.speeds[3] == pytest.approx(18966.4228)
    # the very figures of Batsim's file (its comment: 100.99672131147543 W, 125.1743848996832 W)
    assert h.all_cores[2] == 100.99672131147543 and h.all_cores[3] == 125.1743848996832


def test_power_figures_given_on_the_command_line(tmp_path: Path) -> None:
    h = _host_power(_cli(tmp_path, "multicluster", "--clusters", "1", "--nodes", "2",
                         "--idle-watts", "80", "--computing-watts", "250", "--sleep-watts",
                         "5", "--switch-on-time", "300", "--switch-on-energy", "45000"))[0]
    assert (h.idle[0], h.all_cores[0], h.idle[1], h.off) == (80.0, 250.0, 5.0, 5.0)
    assert 1 / h.speeds[3] == pytest.approx(300.0) and h.all_cores[3] == pytest.approx(150.0)
    assert 1 / h.speeds[2] == pytest.approx(6.1)  # the figures not given keep the defaults


def test_simulated_energy_on_a_power_platform(tmp_path: Path) -> None:
    """With -E: one host computes for 7 s (190.738 W), three stay idle (95 W each)."""
    platform = _cli(tmp_path, "multicluster", "--clusters", "1", "--nodes", "4", "--power")
    workload = tmp_path / "w.json"
    workload.write_text('{"nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "res": 1, "walltime": '
                        '60, "profile": "p"}], "profiles": {"p": {"type": '
                        '"parallel_homogeneous", "cpu": 7e9, "com": 0}}}')
    assert main(["simulate", "-p", str(platform), "-w", str(workload), "-E", "-q", "-o",
                 str(tmp_path / "out")]) == 0
    schedule = (tmp_path / "out" / "schedule.csv").read_text().splitlines()
    row = dict(zip(schedule[0].split(","), schedule[1].split(","), strict=True))
    assert float(row["consumed_joules"]) == pytest.approx(3 * 95.0 * 7 + 190.738 * 7)


@pytest.mark.parametrize(("args", "needle"), [
    (["--sleep-watts", "-1"], "--sleep-watts must be a finite number >= 0, got -1.0"),
    (["--idle-watts", "nan"], "--idle-watts must be a finite number >= 0, got nan"),
    (["--switch-off-time", "0"], "--switch-off-time must be > 0 seconds"),
    (["--computing-watts", "50"], "--computing-watts (50.0) is below --idle-watts (95.0)"),
    (["--sleep-watts", "120"], "--sleep-watts (120.0) is above --idle-watts (95.0)"),
])
def test_bad_power_figures_name_the_option(tmp_path: Path, args: list[str], needle: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["platform", "multicluster", "--clusters", "1", "--nodes", "2", *args,
                 "-o", str(tmp_path / "p.xml")]) == 1
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "p.xml").exists()
