"""Seeded cases for the differential fuzzer (``bench/fidelity/fuzz.py``).

Each case draws a platform, a workload, a scheduler and Batsim's flags.

A :class:`FuzzCase` is self-contained (the platform's XML text, the workload, the
usage-trace files, batsched's variant and options, Batsim's flags), so that its hash
(:meth:`FuzzCase.key`) names real Batsim's outputs in the cache and a shrunk case
(``fuzz_shrink.py``) is just another case. :func:`generate` draws one from a seed:

- platforms: Batsim 4.2.1's archive (``small_platform.xml``, ``cluster512.xml``,
  ``cluster512_pfs.xml`` with its storage host, the energy ones, the ``*_no_net`` ones,
  ``small_platform_usage_replay.xml``, ``cluster_locality_8x16.xml``), the energy
  platforms of ``bench/fidelity/energy_own_cases.py`` (several cores, two sleep pstates), the
  generators of ``batpolicy platform`` (multi-cluster, racks: uplinks with latency) and
  :func:`cluster_xml` (one ``<cluster>`` with SHARED, FATPIPE or SPLITDUPLEX private
  links, a SHARED or FATPIPE backbone or none, a loopback or not, latencies from 0 to
  milliseconds, bandwidths from 1 Mbps to 400 Gbps, 1 to 4 cores);
- workloads (:func:`random_workload`): every profile type Batsim 4.2.1 reads without
  SMPI (``delay``, ``parallel`` with a dense, sparse, zero or huge com matrix,
  ``parallel_homogeneous``, ``parallel_homogeneous_total``, ``composed`` with repeat and
  nested sequences, ``parallel_homogeneous_pfs`` where a storage host exists,
  ``data_staging``, ``usage_trace`` with ``bench/fidelity/usage_trace_cases.py``'s rank files),
  sized to the platform's speed and bandwidth so that jobs last seconds to minutes;
  walltimes unset, below, at and above the runtime;
- schedulers: batsched 1.4's ``fcfs_fast``, ``fcfs``, ``easy_bf``, ``conservative_bf``,
  ``filler`` (random options), ``killer``/``killer2`` (random kills), ``sequencer``,
  ``rejecter``, and on energy platforms ``sleeper`` and the energy family
  (``energy_bf*``, random options beside the platform's energy model), never ``random``
  (its C++ draws from an unseeded ``std::random_device``);
- flags: ``-E`` on energy platforms, ``--enable-compute-sharing`` (with several jobs per
  host: ``filler``), ``--forward-profiles-on-submission``.
"""

from __future__ import annotations

import hashlib
import json
import random
import shlex
import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1] / "tests"))

from energy_own_cases import PLATFORMS as ENERGY_PLATFORMS  # noqa: E402
from usage_trace_cases import _rank_lines  # noqa: E402

from batpolicy.platforms.generators import GroupSpec, to_xml  # noqa: E402

import batsim_suite  # noqa: E402

ARCHIVE = Path("/opt/batsim-4.2.1/src/batsim/platforms")

#: archive platform -> (compute machines, flop/s of a slow host, byte/s of a slow link,
#: storage host or None, energy model name in ENERGY_PLATFORMS or None)
ARCHIVE_PLATFORMS: dict[str, tuple[int, float, float, str | None, str | None]] = {
    "small_platform.xml": (4, 4.8e7, 7e6, None, None),
    "cluster512.xml": (512, 1e9, 1.25e9, None, None),
    "cluster512_pfs.xml": (512, 1e9, 1.25e9, "pfs_host", None),
    "small_platform_usage_replay.xml": (4, 50.0, 7e6, None, None),
    "cluster_locality_8x16.xml": (128, 1e9, 1.25e9, None, None),
    "energy_platform_homogeneous_no_net_128.xml": (128, 1e8, 0.0, None, None),
    "energy_platform_homogeneous.xml": (4, 1e8, 1.25e8, None, None),
    "cluster_energy_128.xml": (128, 1e8, 1.25e8, None, "cluster_energy_128"),
}
#: energy platforms of bench/fidelity/energy_own_cases.py -> (machines, flop/s, byte/s)
OWN_ENERGY = {"multicore16": (16, 1e9, 1.25e9), "twosleep8": (8, 2e8, 1.25e8)}

PLAIN_VARIANTS = ("fcfs_fast", "fcfs_fast", "fcfs", "easy_bf", "easy_bf", "conservative_bf",
                  "conservative_bf", "filler", "filler", "killer", "killer2", "sequencer",
                  "rejecter")
ENERGY_VARIANTS = ("sleeper", "energy_bf", "energy_bf_idle_sleeper", "energy_bf_dicho",
                   "energy_bf_monitoring", "energy_bf_monitoring_inertial",
                   "energy_bf_subpart_sleeper", "energy_watcher")


@dataclass(frozen=True)
class FuzzCase:
    """One generated case, self-contained (module docstring)."""

    seed: int
    platform_name: str
    platform: str                      #: SimGrid XML text
    workload: dict[str, Any]           #: Batsim JSON workload
    variant: str                       #: batsched's ``-v``
    options: dict[str, Any] = field(default_factory=dict)  #: batsched's variant options
    flags: tuple[str, ...] = ()        #: Batsim flags beside -p, -w, -e
    traces: dict[str, str] = field(default_factory=dict)  #: usage-trace files by path

    def key(self) -> str:
        """A hash of what the simulators see (not the seed nor the name): the cache's key."""
        blob = json.dumps([self.platform, self.workload, self.variant, self.options,
                           list(self.flags), self.traces], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:20]

    @property
    def label(self) -> str:
        """A readable name: seed, platform, variant, flags."""
        flags = "".join(f.replace("--enable-", "+").replace("-E", "+E")
                        .replace("--forward-profiles-on-submission", "+fwd")
                        for f in self.flags)
        return f"s{self.seed}-{self.platform_name}-{self.variant}{flags}"

    @property
    def is_energy(self) -> bool:
        """Run with Batsim's energy plugin."""
        return "-E" in self.flags

    def to_json(self) -> str:
        """The case as JSON (read back by :func:`case_from_json`)."""
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    def write_inputs(self, folder: Path) -> tuple[Path, Path, Path | None]:
        """Write platform, workload, traces and options under ``folder``; their paths."""
        folder.mkdir(parents=True, exist_ok=True)
        platform = folder / "platform.xml"
        platform.write_text(self.platform)
        workload = folder / "workload.json"
        workload.write_text(json.dumps(self.workload, indent=1))
        for rel, text in self.traces.items():
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        options = None
        if self.options:
            options = folder / "options.json"
            extra = {}
            if "output_dir" in self.options:  # batsched's energy schedulers write there
                (folder / "sched").mkdir(exist_ok=True)
                extra = {"output_dir": str(folder / "sched"),
                         "trace_output_filename": str(folder / "sched" / "trace.csv")}
            options.write_text(json.dumps({**self.options, **extra}, sort_keys=True))
        return platform, workload, options

    def suite_case(self, folder: Path) -> batsim_suite.Case:
        """The case as ``tests/batsim_suite.py`` runs it, inputs written under ``folder``."""
        platform, workload, options = self.write_inputs(folder)
        batcmd = shlex.join(["batsim", "-p", str(platform), "-w", str(workload), "-e",
                             str(folder / "out"), *self.flags])
        sched = ["batsched", "-v", self.variant]
        if options is not None:
            sched += ["--variant_options_filepath", str(options)]
        return batsim_suite.Case(test=f"fuzz::{self.label}", name=self.label,
                                 batcmd=batcmd, schedcmd=shlex.join(sched))


def case_from_json(text: str) -> FuzzCase:
    """The :class:`FuzzCase` of :meth:`FuzzCase.to_json`."""
    data = json.loads(text)
    data["flags"] = tuple(data["flags"])
    return FuzzCase(**data)


# ---- platforms --------------------------------------------------------------------------

def _bw(rng: random.Random) -> tuple[str, float]:
    """A bandwidth from 1 Mbps to 400 Gbps (SimGrid text, byte/s)."""
    bps = rng.choice((1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 4e11)) * rng.choice((1, 1.25, 2.5))
    return f"{bps:g}bps", bps / 8


def _lat(rng: random.Random) -> str:
    """A latency from 0 to 2 ms."""
    return rng.choice(("0s", "0s", "1us", "10us", "50us", "100us", "500us", "2ms"))


def cluster_xml(rng: random.Random, nodes: int) -> tuple[str, float, float]:
    """One ``<cluster>`` of ``nodes`` hosts plus a master: (XML, flop/s, byte/s)."""
    bw_text, bw = _bw(rng)
    bb_text, bb = _bw(rng)
    speed = rng.choice((1e8, 1e9, 2.5e9, 1e10))
    policy = rng.choice(("SHARED", "FATPIPE", "SPLITDUPLEX"))
    attrs = [f'bw="{bw_text}"', f'lat="{_lat(rng)}"', f'sharing_policy="{policy}"',
             f'core="{rng.choice((1, 1, 2, 4))}"']
    if rng.random() < 0.7:
        attrs += [f'bb_bw="{bb_text}"', f'bb_lat="{_lat(rng)}"',
                  f'bb_sharing_policy="{rng.choice(("SHARED", "FATPIPE"))}"']
    if rng.random() < 0.4:
        lo_text, _ = _bw(rng)
        attrs += [f'loopback_bw="{lo_text}"', f'loopback_lat="{_lat(rng)}"']
    xml = f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="AS0" routing="Full">
  <cluster id="c" prefix="host" suffix="" radical="0-{nodes - 1}" speed="{speed:g}f"
           {' '.join(attrs)}/>
  <cluster id="m" prefix="master_host" suffix="" radical="0-0" bw="{bw_text}" lat="{_lat(rng)}"
           speed="{speed:g}f"><prop id="role" value="master"/></cluster>
  <link id="backbone" bandwidth="{bb_text}" latency="{_lat(rng)}"/>
  <zoneRoute src="c" dst="m" gw_src="hostc_router" gw_dst="master_hostm_router">
    <link_ctn id="backbone"/>
  </zoneRoute>
</zone>
</platform>
"""
    return xml, speed, min(bw, bb)


def groups_xml(rng: random.Random) -> tuple[str, str, int, float, float]:
    """A ``batpolicy platform`` of clusters or racks: (name, XML, machines, flop/s, byte/s)."""
    kind = rng.choice(("cluster", "rack"))
    count, nodes = rng.randint(2, 4), rng.choice((2, 4, 6, 8))
    bw_text, bw = _bw(rng)
    speed = rng.choice(("1Gf", "2Gf", "500Mf"))
    groups = [GroupSpec(name=f"{kind}{i}", kind=kind, nodes=nodes, speed=speed,
                        uplink_bandwidth=bw_text, uplink_latency=_lat(rng),
                        gpu=kind == "rack" and i == 0)
              for i in range(count)]
    flops = {"1Gf": 1e9, "2Gf": 2e9, "500Mf": 5e8}[speed]
    return f"gen-{kind}s{count}x{nodes}", to_xml(groups), count * nodes, flops, bw


# ---- workloads --------------------------------------------------------------------------

@dataclass
class Sizes:
    """What the workload generator needs to know of the platform."""

    machines: int
    speed: float        #: flop/s of a slow host
    bandwidth: float    #: byte/s of a slow link (0: no network)
    storage: bool       #: a storage host for parallel_homogeneous_pfs
    usage_speed: float  #: flop/s per core for usage traces


def _com_matrix(rng: random.Random, n: int, scale: float) -> list[float]:
    """A com matrix: dense, sparse, zero or huge (module docstring)."""
    kind = rng.choice(("dense", "sparse", "zero", "huge", "diag"))
    out = []
    for a in range(n):
        for b in range(n):
            if kind == "zero":
                out.append(0.0)
            elif kind == "diag":
                out.append(round(rng.uniform(0, scale), 1) if a == b else 0.0)
            elif kind == "sparse":
                out.append(round(rng.uniform(0, scale), 1) if rng.random() < 0.2 else 0.0)
            elif kind == "huge":
                out.append(round(rng.uniform(10, 100) * scale, 1) if a != b else 0.0)
            else:
                out.append(round(rng.uniform(0, scale), 1) if a != b else 0.0)
    return out


def random_profile(rng: random.Random, kinds: list[str], sizes: Sizes, res: int,
                   profiles: dict[str, dict], name: str, depth: int = 0) -> str:
    """Add a random profile (and its parts) named ``name`` to ``profiles``; return the name."""
    kind = rng.choice(kinds if depth < 2 else [k for k in kinds if k != "composed"])
    seconds = rng.choice((0.5, 2.0, 10.0, 40.0, 150.0)) * rng.uniform(0.5, 1.5)
    flops = round(seconds * sizes.speed, 1)
    com = round(rng.choice((0.0, 0.1, 1.0, 5.0)) * seconds * sizes.bandwidth, 1) \
        if sizes.bandwidth else 0.0
    if kind == "delay":
        delay = round(seconds, rng.choice((0, 3, 6)) if seconds >= 1 else 6)
        profiles[name] = {"type": "delay", "delay": 0 if rng.random() < 0.005 else delay}
    elif kind == "parallel":
        profiles[name] = {"type": "parallel",
                          "cpu": [round(rng.uniform(0, 1) * flops, 1) for _ in range(res)],
                          "com": _com_matrix(rng, res, com / max(res, 1)) if com else
                          [0.0] * (res * res)}
    elif kind == "parallel_homogeneous":
        profiles[name] = {"type": "parallel_homogeneous", "cpu": flops,
                          "com": round(com / max(res, 1), 1)}
    elif kind == "parallel_homogeneous_total":
        profiles[name] = {"type": "parallel_homogeneous_total", "cpu": flops * res,
                          "com": com * res}
    elif kind == "parallel_homogeneous_pfs":
        profiles[name] = {"type": "parallel_homogeneous_pfs",
                          "bytes_to_read": round(rng.uniform(0, 1) * com, 1),
                          "bytes_to_write": round(rng.uniform(0, 1) * com, 1),
                          "storage": "pfs"}
    elif kind == "data_staging":
        profiles[name] = {"type": "data_staging", "nb_bytes": com, "from": "pfs",
                          "to": "nfs"}
    elif kind == "usage_trace":
        profiles[name] = {"type": "usage_trace", "trace": f"traces/{name}/traces.txt"}
    else:  # composed: a sequence of 1-3 parts, perhaps nested, repeated
        parts = [random_profile(rng, kinds, sizes, res, profiles, f"{name}_{i}", depth + 1)
                 for i in range(rng.randint(1, 3))]
        profiles[name] = {"type": "composed", "repeat": rng.choice((1, 1, 2, 3)),
                          "seq": parts}
    return name


def _usage_traces(rng: random.Random, profiles: dict[str, dict], speed: float
                  ) -> dict[str, str]:
    """Rank files of every ``usage_trace`` profile (``bench/fidelity/usage_trace_cases.py``'s)."""
    traces = {}
    for name, p in profiles.items():
        if p["type"] != "usage_trace":
            continue
        ranks = rng.choice((1, 2, 3, 5))
        files = []
        for rank in range(ranks):
            traces[f"traces/{name}/rank{rank}.txt"] = _rank_lines(rng, rank, speed)
            files.append(f"rank{rank}.txt")
        traces[f"traces/{name}/traces.txt"] = "\n".join(files) + "\n"
    return traces


def _runtime_hint(profiles: dict[str, dict], name: str, sizes: Sizes) -> float:
    """A rough runtime of a profile (for walltimes below, at and above it)."""
    p = profiles[name]
    kind = p["type"]
    if kind == "delay":
        return float(p["delay"])
    if kind == "composed":
        return p.get("repeat", 1) * sum(_runtime_hint(profiles, s, sizes) for s in p["seq"])
    if kind == "parallel":
        return max(p["cpu"], default=0.0) / sizes.speed
    if kind in ("parallel_homogeneous",):
        return p["cpu"] / sizes.speed
    if kind == "parallel_homogeneous_total":
        return p["cpu"] / sizes.speed / 4
    return 10.0


def random_workload(rng: random.Random, sizes: Sizes, nb_jobs: int
                    ) -> tuple[dict, dict[str, str]]:
    """A Batsim workload of ``nb_jobs`` jobs over ``sizes``; and its usage-trace files."""
    kinds = ["delay", "parallel", "parallel_homogeneous", "parallel_homogeneous_total",
             "composed"]
    if sizes.bandwidth == 0:  # no network: only computations
        kinds = ["delay", "parallel_homogeneous", "composed"]
    if sizes.storage:
        kinds += ["parallel_homogeneous_pfs"] * 2
    if rng.random() < 0.03:
        kinds.append("data_staging")
    if sizes.usage_speed and rng.random() < 0.3:
        kinds.append("usage_trace")
    profiles: dict[str, dict] = {}
    jobs, t = [], 0.0
    max_res = max(1, min(sizes.machines, rng.choice((2, 4, 8, 16))))
    for i in range(nb_jobs):
        t += rng.choice((0.0, 0.0, 1.0, 5.0, 30.0, rng.uniform(0, 60)))
        res = rng.randint(1, max_res)
        name = random_profile(rng, kinds, sizes, res, profiles, f"p{i}")
        if rng.random() < 0.2 and i:  # reuse an earlier job's profile
            earlier = jobs[rng.randrange(len(jobs))]
            name, res = earlier["profile"], earlier["res"]  # a parallel part fixes it
        hint = _runtime_hint(profiles, name, sizes)
        walltime = rng.choice((-1, -1, round(hint * 0.5, 3), round(hint, 3),
                               round(hint * 3 + 10, 1), 1e5))
        jobs.append({"id": str(i), "subtime": round(t, 6), "res": res,
                     "walltime": walltime, "profile": name})
    used = {j["profile"] for j in jobs}
    keep: set[str] = set()

    def mark(n: str) -> None:
        keep.add(n)
        for s in profiles[n].get("seq", ()):
            mark(s)
    for n in used:
        mark(n)
    profiles = {k: v for k, v in profiles.items() if k in keep}
    traces = _usage_traces(rng, profiles, sizes.usage_speed) if sizes.usage_speed else {}
    return {"nb_res": sizes.machines, "jobs": jobs, "profiles": profiles}, traces


# ---- schedulers --------------------------------------------------------------------------

def scheduler(rng: random.Random, energy_model: dict[str, float] | None
              ) -> tuple[str, dict[str, Any]]:
    """Batsched's variant and options (module docstring)."""
    if energy_model is not None and rng.random() < 0.5:
        variant = rng.choice(ENERGY_VARIANTS)
        options: dict[str, Any] = {**energy_model, "output_dir": "sched"}
        options.update({
            "monitoring_period": rng.choice((10, 30, 60, 120)),
            "idle_time_to_sedate": rng.choice((0, 10, 30, 120, 1e9)),
            "sedate_idle_on_classical_events": rng.random() < 0.5,
            "ensured_sleep_time_lower_bound": rng.choice((0, 0, 10)),
            "ensured_sleep_time_upper_bound": rng.choice((0, 0, 600)),
            "inertial_alteration": rng.choice(("x1", "x2", "p0")),
            "upper_llh_threshold": rng.choice((0.5, 1.0)),
        })
        return variant, options
    variant = rng.choice(PLAIN_VARIANTS)
    options = {}
    if variant == "filler":
        options = {"fraction_of_machines_to_use": rng.choice((1, 0.5, 0.25)),
                   "set_job_metadata": rng.random() < 0.3}
    elif variant in ("killer", "killer2"):
        options = {"nb_kills_per_job": rng.choice((0, 1, 2)),
                   "delay_before_kill": rng.choice((0, 1, 5, 30))}
    return variant, options


# ---- one case ----------------------------------------------------------------------------

def generate(seed: int, *, max_jobs: int = 16) -> FuzzCase:
    """The case of ``seed`` (module docstring)."""
    rng = random.Random(seed)
    pick = rng.random()
    energy_model = None
    usage_speed = 0.0
    if pick < 0.45:
        name = rng.choice(sorted(ARCHIVE_PLATFORMS))
        machines, speed, bw, storage, model = ARCHIVE_PLATFORMS[name]
        xml = (ARCHIVE / name).read_text()
        if model is not None:
            energy_model = ENERGY_PLATFORMS[model][2]
        if name == "small_platform_usage_replay.xml":
            usage_speed = speed
        sizes = Sizes(machines, speed, bw, storage is not None, usage_speed)
        name = name.removesuffix(".xml")
    elif pick < 0.6:
        name = rng.choice(sorted(OWN_ENERGY))
        machines, speed, bw = OWN_ENERGY[name]
        xml = ENERGY_PLATFORMS[name][0]
        energy_model = ENERGY_PLATFORMS[name][2]
        sizes = Sizes(machines, speed, bw, False, speed if name == "multicore16" else 0.0)
    elif pick < 0.8:
        name, xml, machines, speed, bw = groups_xml(rng)
        sizes = Sizes(machines, speed, bw, False, 0.0)
    else:
        nodes = rng.choice((2, 3, 4, 8, 16))
        xml, speed, bw = cluster_xml(rng, nodes)
        name = f"gen-cluster{nodes}"
        sizes = Sizes(nodes, speed, bw, False, speed if rng.random() < 0.3 else 0.0)
    workload, traces = random_workload(rng, sizes, rng.randint(1, max_jobs))
    variant, options = scheduler(rng, energy_model)
    flags: list[str] = []
    if energy_model is not None and (variant in ENERGY_VARIANTS or rng.random() < 0.5):
        flags.append("-E")
    if rng.random() < 0.25:
        flags.append("--enable-compute-sharing")
    if rng.random() < 0.2:
        flags.append("--forward-profiles-on-submission")
    return FuzzCase(seed=seed, platform_name=name, platform=xml, workload=workload,
                    variant=variant, options=options, flags=tuple(flags), traces=traces)


def with_workload(case: FuzzCase, workload: dict, traces: dict[str, str] | None = None
                  ) -> FuzzCase:
    """``case`` with another workload (the shrinker's step)."""
    return replace(case, workload=workload,
                   traces=case.traces if traces is None else traces)
