"""SimGrid's parallel-task model (``ptask_L07`` + fair bottleneck).

Checked against hand-computed cases and against runtimes measured with real Batsim
4.2.1 (``batsched fcfs`` on ``small_platform.xml`` with ``test_various_profile_types.json``,
jobs.csv's ``execution_time``, printed to 1e-6 s).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from batpolicy.platforms.routes import Hop, read_routes
from batpolicy.simulator.jobmodels.ptask.l07 import L07Model
from batpolicy.simulator.jobmodels.ptask.lmm import FATPIPE, Constraint, FairBottleneck
from batpolicy.simulator.jobmodels.ptask.route_table import RouteTable
from batpolicy.simulator.jobmodels.ptask.runner import JobRunner

#: Batsim 4.2.1's ``platforms/small_platform.xml``, vendored.
SMALL_PLATFORM = Path(__file__).resolve().parents[1] / "data" / "batsim421" / "small_platform.xml"
#: Batsim's machine ids on it: SimGrid's hosts sorted by name, master_host aside.
SMALL_HOSTS = ["Bourassa", "Fafard", "Ginette", "Jupiter"]


def _run(model: L07Model) -> dict[object, float]:
    """Run every task to its end; {key: end}."""
    now, ends = 0.0, {}
    while model.tasks:
        delta = model.next_event()
        now += delta
        for key in model.advance(delta):
            ends[key] = now
    return ends


@pytest.fixture
def small() -> L07Model:
    routes = read_routes(SMALL_PLATFORM)
    return L07Model([routes.host_cpu[h] for h in SMALL_HOSTS],
                    lambda a, b: routes.links(SMALL_HOSTS[a], SMALL_HOSTS[b]))


def _homogeneous(nb: int, com: float) -> list[float]:
    return [0.0 if i == j else com for i in range(nb) for j in range(nb)]


@pytest.mark.parametrize(("hosts", "cpu", "com", "batsim"), [
    # profile "simple" (parallel): cpu [5e6, 0, 0, 0] and a lower-triangular com matrix
    ((0, 1, 2, 3), [5e6, 0, 0, 0], [5e6, 0, 0, 0, 5e6, 5e6, 0, 0, 5e6, 5e6, 0, 0,
                                    5e6, 5e6, 5e6, 0], 2.083954),
    ((0, 1, 2, 3), [1e7] * 4, _homogeneous(4, 1e6), 0.835644),      # "homogeneous"
    ((0, 1, 2, 3), [0.0] * 4, _homogeneous(4, 1e6), 0.835644),      # "homogeneous_no_cpu"
    ((0, 1, 2, 3), [2e5] * 4, None, 0.004124),                      # "homogeneous_no_com"
    ((0, 1), [5e6] * 2, _homogeneous(2, 5e5), 0.123099),            # "_total" on 2 machines
    ((0, 1, 2, 3), [2.5e6] * 4, _homogeneous(4, 2.5e5), 0.211489),  # "_total" on 4
])
def test_runtimes_measured_on_real_batsim(small: L07Model, hosts: tuple[int, ...],
                                          cpu: list[float], com: list[float] | None,
                                          batsim: float) -> None:
    small.start("job", hosts, cpu, com)
    assert _run(small)["job"] == pytest.approx(batsim, abs=1e-6)


def _pair(bandwidth: float = 1e6, latency: float = 0.01, sharing: str = "SHARED") -> L07Model:
    link = Hop(latency, bandwidth, "l", sharing)
    return L07Model([(1e9, 1), (1e9, 1)], lambda a, b: [] if a == b else [link])


def test_communication_pays_latency_then_shares_the_link() -> None:
    model = _pair()
    model.start("a", (0, 1), [0, 0], [0, 1e6, 0, 0])
    assert _run(model) == {"a": pytest.approx(0.01 + 1.0)}
    model = _pair()
    model.start("a", (0, 1), [0, 0], [0, 1e6, 0, 0])
    model.start("b", (0, 1), [0, 0], [0, 1e6, 0, 0])
    assert _run(model) == {"a": pytest.approx(2.01), "b": pytest.approx(2.01)}


def test_fatpipe_link_gives_each_task_its_whole_bandwidth() -> None:
    model = _pair(sharing=FATPIPE)
    model.start("a", (0, 1), [0, 0], [0, 1e6, 0, 0])
    model.start("b", (0, 1), [0, 0], [0, 1e6, 0, 0])
    assert _run(model) == {"a": pytest.approx(1.01), "b": pytest.approx(1.01)}


def test_rates_move_when_a_task_ends() -> None:
    """B (2 MB) shares the link's bytes equally with a (1 MB) until a ends, then has it alone."""
    model = _pair(latency=0.0)
    model.start("a", (0, 1), [0, 0], [0, 1e6, 0, 0])
    model.start("b", (0, 1), [0, 0], [0, 2e6, 0, 0])
    # fair bottleneck shares the capacity, not the rates: 0.5e6 B/s each, a (0.5 task/s)
    # ends at 2 s, b (0.25 task/s) has moved 1 MB of 2 and moves the last 1 MB alone.
    ends = _run(model)
    assert ends["a"] == pytest.approx(2.0)
    assert ends["b"] == pytest.approx(3.0)


def test_tcp_gamma_bounds_a_long_latency_transfer() -> None:
    """Bound = TCP_gamma / (2 lat bytes): 4194304 / (2 x 1 x 1e8) task/s on a 1e12 B/s link."""
    model = _pair(bandwidth=1e12, latency=1.0)
    model.start("a", (0, 1), [0, 0], [0, 1e8, 0, 0])
    assert _run(model)["a"] == pytest.approx(1.0 + 2 * 1e8 / 4194304)


def test_executors_mapped_on_one_host_share_its_cores() -> None:
    """Two executors on a 1-core host: half speed each; on a 4-core host: full speed."""
    for cores, end in ((1, 2.0), (4, 1.0)):
        model = L07Model([(1e9, cores)], lambda a, b: [])
        model.start("a", (0, 0), [1e9, 1e9], None)
        assert _run(model)["a"] == pytest.approx(end)
        assert not model.tasks


def test_cpu_bound_is_one_core_and_load_is_exposed() -> None:
    model = L07Model([(1e9, 2), (1e9, 2)], lambda a, b: [])
    model.start("a", (0, 1), [1e9, 2e9], None)
    model.next_event()
    assert model.rate("a") == pytest.approx(0.5)  # the 2e9 flop on one core: 2 s
    assert model.host_load(0) == pytest.approx(0.5e9)
    assert model.host_load(1) == pytest.approx(1e9)


def test_empty_task_ends_at_once_and_cancel_frees_resources() -> None:
    model = _pair()
    model.start("nothing", (0, 1), [0, 0], None)
    model.start("long", (0, 1), [0, 0], [0, 1e6, 0, 0])
    model.start("other", (0, 1), [0, 0], [0, 1e6, 0, 0])
    assert model.next_event() == 0.0
    assert model.advance(0.0) == ["nothing"]
    model.cancel("other")
    assert _run(model)["long"] == pytest.approx(1.01)


def test_fair_bottleneck_two_links() -> None:
    """X uses links A (1) and B (1), y uses B only: B is the bottleneck, shared equally."""
    system = FairBottleneck()
    link_a, link_b = Constraint(1.0), Constraint(1.0)
    x, y = system.variable_new("x"), system.variable_new("y")
    system.expand(link_a, x, 1.0)
    system.expand(link_b, x, 1.0)
    system.expand(link_b, y, 1.0)
    system.solve()
    assert (x.value, y.value) == (pytest.approx(0.5), pytest.approx(0.5))


def test_cluster_routes_name_their_links_as_simgrid(tmp_path: Path) -> None:
    """Cluster links as ``sg_platf_new_cluster_flat`` names them.

    SPLITDUPLEX private links have _UP and _DOWN halves, the backbone is crossed once,
    a host reaches itself through its own link once.
    """
    path = tmp_path / "c.xml"
    path.write_text("""<?xml version='1.0'?><platform version="4.1"><zone id="z" routing="Full">
      <cluster id="c" prefix="c" suffix="" radical="0-1" speed="1Gf" bw="1GBps" lat="1us"
               bb_bw="2GBps" bb_lat="2us"/>
      <cluster id="s" prefix="s" suffix="" radical="0-1" speed="1Gf" bw="1GBps" lat="1us"
               sharing_policy="SHARED" limiter_link="1GBps"/>
    </zone></platform>""")
    routes = read_routes(path)

    def names(a: str, b: str) -> list[str]:
        return [hop.name for hop in routes.links(a, b)]
    assert names("c0", "c1") == ["c_link_0_UP", "c_backbone", "c_link_1_DOWN"]
    assert names("c0", "c0") == ["c_link_0_UP", "c_backbone", "c_link_0_DOWN"]
    assert names("s0", "s0") == ["s_link_0_limiter", "s_link_0"]
    assert sum(hop.latency for hop in routes.links("c0", "c1")) == pytest.approx(4e-6)


@pytest.mark.parametrize("dense_limit", [2048, 0], ids=["dense rows", "pair dictionary"])
def test_route_table_gives_each_pair_its_route_in_cell_order(dense_limit: int) -> None:
    """A task's pairs from the table: every route's links in cell order, latencies summed.

    On ``small_platform.xml`` (multi-hop routes), with a host listed twice and cells
    met again by a second task (then read from the table), in both of its layouts.
    """
    routes = read_routes(SMALL_PLATFORM)
    names: list[str] = []

    def link(hop: Hop) -> int:
        if hop.name not in names:
            names.append(hop.name)
        return names.index(hop.name)

    table = RouteTable(len(SMALL_HOSTS),
                       lambda a, b: routes.links(SMALL_HOSTS[a], SMALL_HOSTS[b]), link,
                       dense_limit)
    for hosts in ((0, 2, 0, 3), (3, 1, 2)):
        nb = len(hosts)
        cells = np.array([c for c in range(nb * nb) if c % (nb + 1)])  # off the diagonal
        links, sizes, latencies = table.pairs(hosts, cells)
        expected_links, expected_sizes, expected_latencies = [], [], []
        for cell in cells.tolist():
            hops = routes.links(SMALL_HOSTS[hosts[cell // nb]], SMALL_HOSTS[hosts[cell % nb]])
            expected_links += [names.index(h.name) for h in hops]
            expected_sizes.append(len(hops))
            expected_latencies.append(sum(h.latency for h in hops))
        assert [names[i] for i in links.tolist()] == [names[i] for i in expected_links]
        assert sizes.tolist() == expected_sizes
        assert latencies.tolist() == expected_latencies


def test_changed_constraint_bound_moves_the_rates_at_the_next_solve() -> None:
    """A constraint's new bound (a host's new speed) is seen by the next solve."""
    system = FairBottleneck()
    cpu = Constraint(1.0)
    x = system.variable_new("x")
    system.expand(cpu, x, 1.0)
    system.solve()
    assert (x.value, cpu.remaining) == (1.0, 0.0)
    cpu.bound = 4.0
    assert system.modified
    system.solve()
    assert x.value == 4.0


def test_runner_update_due_only_at_a_new_date_or_the_planned_update() -> None:
    """A move to the last update's date is one more round of actors, not a model update.

    Unless :meth:`JobRunner.next_time` planned an update there (a zero delta): then the
    rates solved after the last update come into force for the energy plugin.
    """
    runner = JobRunner(L07Model([(1e9, 1)], lambda a, b: []))
    runner.actors.sleep(2.0, lambda: None)
    at = runner.next_time()
    assert at == 2.0 and runner.update_due(at)
    runner.advance_to(at)
    assert len(runner.actors.arrived()) == 1
    assert not runner.update_due(at)  # the actors woken at 2.0 run before the next solve
    runner.actors.sleep(0.0, lambda: None)
    assert runner.next_time() == at and runner.update_due(at)  # a zero-delta update
    assert runner.update_due(at + 1e-6)
