"""Minimal cases where the differential fuzzer found fake-batsim apart from real Batsim.

``bench/fidelity/fuzz.py`` runs generated cases on real Batsim 4.2.1 + batsched and on
``fake-batsim``, and shrinks each difference to a minimal case;
``bench/fidelity/fuzz_vendor.py`` copied these under ``tests/data/fuzz/NAME/`` with
Batsim's conversation and outputs (``tests/data/fuzz/README.md`` says what each shows).
Replayed message for message (the scheduler's recorded replies; each of Batsim's
messages must be the recorded one, whole), the simulator must write Batsim's jobs.csv
rows, machine_states.csv, every schedule.csv column but the wall-clock ones, and the
Pajé schedule.trace where it was vendored (job colours masked: Batsim shuffles them) — so
a clone without Batsim checks that each cause stays fixed. A case vendored as a known
difference (``fuzz_vendor.py --known``) is expected to fail until its cause is fixed.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from sim.test_transcript_fidelity import as_batsim_json

from batpolicy.io.batsim_json import read_batsim_workload
from batpolicy.io.machine_states import HEADER, format_row
from batpolicy.io.outputs import format_job_row, schedule_fields
from batpolicy.io.paje import PajeTraceWriter
from batpolicy.platforms.xml import read_platform
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import reply_from_obj, request_from_obj
from batpolicy.simulator import SimOptions
from batpolicy.simulator.json_quirks import batsim_reads_text
from batpolicy.simulator.latency.driver import make_simulator

from batsim_suite import mask_colours

DATA = Path(__file__).resolve().parents[1] / "data" / "fuzz"
CASES = sorted(p.name for p in DATA.iterdir() if (p / "case.json").is_file()) \
    if DATA.is_dir() else []
#: schedule.csv columns that are wall-clock measurements or versions.
WALL_CLOCK = {"batsim_version", "scheduling_time", "simulation_time"}
#: Batsim flag -> SimOptions field.
FLAGS = {"-E": "energy", "--enable-compute-sharing": "compute_sharing",
         "--forward-profiles-on-submission": "forward_profiles"}


def _short(value: Any) -> Any:
    """``value`` with every float to 13 significant digits.

    Batsim writes SIMULATION_BEGINS' profile floats with rapidjson's 15, rounded its own
    way; we write Python's repr.
    """
    if isinstance(value, float):
        return float(f"{value:.13g}")
    if isinstance(value, dict):
        return {k: _short(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_short(v) for v in value]
    return value


def _reply(line: dict[str, Any]) -> t.Reply:
    """The scheduler's recorded reply; read from its text as Batsim read it, if kept.

    ``log_to_transcript`` keeps the text of a reply with a long number
    (``scheduler_text``): Batsim reads such numbers from the text (``batsim_reads_text``).
    """
    reply = reply_from_obj(line["scheduler"])
    text = line.get("scheduler_text")
    return reply if text is None else batsim_reads_text(reply, text)


class Replay:
    """Answers with the recorded replies; each request must be Batsim's message, whole."""

    def __init__(self, folder: Path) -> None:
        path = folder / "conversation.jsonl"
        text = path.read_text() if path.is_file() else \
            gzip.decompress(path.with_suffix(".jsonl.gz").read_bytes()).decode()
        self.recorded = [(request_from_obj(r["batsim"]), _reply(r))
                         for r in map(json.loads, text.splitlines()) if r]
        self.position = 0

    def __call__(self, request: t.Request) -> t.Reply:
        assert self.position < len(self.recorded), f"a message Batsim did not send: {request}"
        expected, reply = self.recorded[self.position]
        got = (request.now, [_short(as_batsim_json(e)) for e in request.events])
        want = (expected.now, [_short(as_batsim_json(e)) for e in expected.events])
        assert got == want, f"Batsim's message #{self.position + 1}:\n{want}\nours:\n{got}"
        self.position += 1
        return reply


def replay(name: str, trace: Path | None = None) -> tuple[Any, list[str], Any]:
    """Run case ``name`` against its recorded replies: (result, machine-state rows, sim).

    ``trace``: also write the Pajé schedule trace there, ended at the run's end clock.
    """
    folder = DATA / name
    case = json.loads((folder / "case.json").read_text())
    options = SimOptions(**{FLAGS[f]: True for f in case["flags"]})
    sim = make_simulator([read_batsim_workload(folder / "workload.json", "w0")],
                         read_platform(folder / "platform.xml"), options=options)
    rows: list[str] = []
    sim.trace_machine_states(lambda batch: rows.extend(format_row(*row) for row in batch))
    writer = None
    if trace is not None:
        writer = PajeTraceWriter(trace, sim.machine_names, sharing=options.compute_sharing)
        sim.trace_schedule(writer)
    scheduler = Replay(folder)
    result = sim.run(scheduler)
    assert scheduler.position == len(scheduler.recorded)
    assert result.complete
    if writer is not None:
        writer.finish(sim.end_clock())
    return result, rows, sim


def _case(name: str) -> Any:
    """The case as a test parameter, a known difference marked to fail.

    A case whose case.json has ``known_difference`` (not fixed yet) is expected to fail,
    strictly, so that its fix shows as an XPASS failure and the marker goes.
    """
    known = json.loads((DATA / name / "case.json").read_text()).get("known_difference")
    if known:
        return pytest.param(name, marks=pytest.mark.xfail(reason=known, strict=True,
                                                          raises=AssertionError))
    return name


@pytest.mark.parametrize("name", [_case(n) for n in CASES])
def test_fuzz_reproducer_writes_batsims_outputs(name: str, tmp_path: Path) -> None:
    folder = DATA / name
    vendored_trace = folder / "schedule.trace"
    trace = tmp_path / "schedule.trace" if vendored_trace.is_file() else None
    result, states, sim = replay(name, trace)
    assert sorted(format_job_row(r) for r in result.records) == \
        sorted((folder / "jobs.csv").read_text().splitlines(keepends=True)[1:])
    assert HEADER + "".join(states) == (folder / "machine_states.csv").read_text()
    header, values = (folder / "schedule.csv").read_text().splitlines()
    reference = dict(zip(header.split(","), values.split(","), strict=True))
    fields = schedule_fields(result)
    assert {k: v for k, v in fields.items() if k in reference and k not in WALL_CLOCK} == \
        {k: v for k, v in reference.items() if k not in WALL_CLOCK}
    if trace is not None:
        assert mask_colours(trace.read_text()) == mask_colours(vendored_trace.read_text())
    if (folder / "consumed_energy.csv").is_file():
        energy = sim.parts.energy
        assert energy is not None
        energy.write(str(tmp_path / "out_"))
        assert (tmp_path / "out_consumed_energy.csv").read_text() == \
            (folder / "consumed_energy.csv").read_text()


def test_compute_sharing_counts_each_machines_busy_time_once() -> None:
    """Five jobs started at once on machines 0.. (``scheduler.py``), overlapping.

    Batsim 4.2.1's ``time_computing`` is each machine's union of busy times (19.124392
    s on machines 0 and 1 for 33.124392 s of jobs), ``time_idle`` the rest up to each
    machine's last state change (``Machine::update_machine_state``).
    """
    result, _, _ = replay("compute-sharing-overlaps")
    fields = schedule_fields(result)
    assert (fields["time_computing"], fields["time_idle"]) == ("54.248783", "82.000210")


def test_the_fuzzers_summary_names_the_cause_of_a_listed_seed(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A DIFF of a seed a known-difference reproducer lists carries that cause in fuzz.txt.

    Listed: the reproducer's ``seed`` or ``alike_seeds`` (bench/results/fuzz.txt). Another
    seed does not carry it, nor does a seed whose reproducer is fixed (no
    ``known_difference``).
    """
    import functools
    import importlib.util
    path = DATA.parents[2] / "bench" / "fidelity" / "fuzz.py"
    spec = importlib.util.spec_from_file_location("fuzz_for_test", path)
    assert spec is not None and spec.loader is not None
    fuzz = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, fuzz)  # dataclasses look the module up
    monkeypatch.setattr(sys, "path", list(sys.path))  # fuzz.py adds its folders
    spec.loader.exec_module(fuzz)
    for name, meta in {"an-open-cause": {"seed": 97, "alike_seeds": [1125],
                                         "known_difference": "SimGrid's clock sums deltas"},
                       "a-fixed-cause": {"seed": 5}}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "case.json").write_text(json.dumps(meta))
    monkeypatch.setattr(fuzz, "known_differences",
                        functools.partial(fuzz.known_differences, tmp_path))
    known = fuzz.known_differences()
    assert set(known) == {97, 1125}
    assert known[1125] == ("an-open-cause", "SimGrid's clock sums deltas")
    text = fuzz.summary([fuzz.Verdict("a", "s1125-energy-easy_bf", "DIFF", ["x"]),
                         fuzz.Verdict("b", "s5-small-fcfs", "DIFF", ["y"]),
                         fuzz.Verdict("c", "s6-small-fcfs", "same")], "0:3")
    lines = text.splitlines()
    assert "DIFF with a known cause (tests/data/fuzz/README.md): 1" in lines
    at = lines.index("DIFF            s1125-energy-easy_bf (a)")
    assert lines[at + 2] == (
        "    known difference, tests/data/fuzz/an-open-cause: SimGrid's clock sums deltas")
    at = lines.index("DIFF            s5-small-fcfs (b)")
    assert lines[at + 1:] == ["    y"]
