"""The ``_schedule.trace`` writer's formatting, line by line, against Batsim's PajeTracer.

The reference is a trace real Batsim 4.2.1 wrote (``tests/data/batsim_suite``,
``test_submitorder2`` on ``small_platform.xml``) and ``export.cpp``: the header with its
trailing spaces, ``%lf`` times, a job's value defined before its first state, kill
events before the machines go back to waiting, the containers destroyed at the end.
"""

from __future__ import annotations

import re
from pathlib import Path

from batpolicy.io.paje import JOB_COLOURS, PajeTraceWriter, job_colours, trace_header
from batpolicy.platforms.xml import read_platform
from batpolicy.protocol.intervals import MachineSet

DATA = Path(__file__).resolve().parents[1] / "data"
REAL = DATA / "batsim_suite" / "submitorder2-samesubmittime-fcfs.schedule.trace"
SMALL = DATA / "batsim421" / "small_platform.xml"


def _names() -> list[str]:
    return [m.name for m in read_platform(SMALL).machines]


def _events(path: Path) -> list[str]:
    """The lines after ``# Begin of events``."""
    text = path.read_text()
    return text[text.index("# Begin of events\n") + len("# Begin of events\n"):].splitlines()


def test_the_header_is_batsims_byte_for_byte() -> None:
    names = _names()
    assert names == ["Bourassa", "Fafard", "Ginette", "Jupiter"]
    header = trace_header(names)
    assert REAL.read_text().startswith(header)
    assert "% Time date \n% Type string  \n" in header  # Batsim's trailing spaces
    assert header.endswith("# Begin of events\n" + "".join(
        f"6 0.000000 machine_state m{i} w\n" for i in range(4)))


def test_a_job_gets_its_value_then_a_state_per_machine_then_waiting(tmp_path: Path) -> None:
    path = tmp_path / "t.trace"
    with PajeTraceWriter(path, ["a", "b", "c"]) as trace:
        trace.job_started("w0!7", MachineSet.of((0, 1)), 10.0000301)
        trace.job_started("w0!8", MachineSet.of(2), 10.5)
        trace.job_ended("w0!7", MachineSet.of((0, 1)), 20.0)
        trace.finish(20.000015)
    assert _events(path) == [
        "6 0.000000 machine_state m0 w", "6 0.000000 machine_state m1 w",
        "6 0.000000 machine_state m2 w",
        f'5 jw0!7 machine_state "w0!7" {JOB_COLOURS[0]}',
        "6 10.000030 machine_state m0 jw0!7", "6 10.000030 machine_state m1 jw0!7",
        f'5 jw0!8 machine_state "w0!8" {JOB_COLOURS[1]}',
        "6 10.500000 machine_state m2 jw0!8",
        "6 20.000000 machine_state m0 w", "6 20.000000 machine_state m1 w",
        "",
        "# End of events, containers destruction",
        "3 20.000015 m0 machine_ct", "3 20.000015 m1 machine_ct", "3 20.000015 m2 machine_ct",
        "3 20.000015 root root_ct"]


def test_kill_events_come_before_the_machines_wait_and_unavailable_ones_stay(
        tmp_path: Path) -> None:
    """add_job_kill(..., true) on the killer and every machine; no idle for a down machine."""
    path = tmp_path / "t.trace"
    with PajeTraceWriter(path, ["a", "b", "c"]) as trace:
        trace.job_started("w0!1", MachineSet.of((0, 2)), 0.0)
        trace.job_ended("w0!1", MachineSet.of((0, 2)), 100.0, unavailable=MachineSet.of(1),
                        kill_events=True)
    assert _events(path)[4:] == [
        "6 0.000000 machine_state m0 jw0!1", "6 0.000000 machine_state m1 jw0!1",
        "6 0.000000 machine_state m2 jw0!1",
        '8 100.000000 kk k "w0!1"', '8 100.000000 km m0 "w0!1"', '8 100.000000 km m1 "w0!1"',
        '8 100.000000 km m2 "w0!1"',
        "6 100.000000 machine_state m0 w", "6 100.000000 machine_state m2 w"]


def test_with_compute_sharing_a_machine_shows_its_first_job(tmp_path: Path) -> None:
    """update_machines_on_job_run/_end write a state only when the shown job changes."""
    path = tmp_path / "t.trace"
    with PajeTraceWriter(path, ["a", "b"], sharing=True) as trace:
        trace.job_started("w0!1", MachineSet.of(0), 1.0)
        trace.job_started("w0!2", MachineSet.of((0, 1)), 2.0)  # m0 keeps showing w0!1
        trace.job_ended("w0!1", MachineSet.of(0), 3.0)         # now m0 shows w0!2
        trace.job_ended("w0!2", MachineSet.of((0, 1)), 4.0)
    assert _events(path)[2:] == [
        f'5 jw0!1 machine_state "w0!1" {JOB_COLOURS[0]}', "6 1.000000 machine_state m0 jw0!1",
        f'5 jw0!2 machine_state "w0!2" {JOB_COLOURS[1]}', "6 2.000000 machine_state m1 jw0!2",
        "6 3.000000 machine_state m0 jw0!2",
        "6 4.000000 machine_state m0 w", "6 4.000000 machine_state m1 w"]


def test_a_closed_trace_keeps_its_events_and_has_no_end(tmp_path: Path) -> None:
    """A run stopped by an error: what was written is on disk, no containers destroyed."""
    path = tmp_path / "t.trace"
    trace = PajeTraceWriter(path, ["a"])
    trace.job_started("w0!1", MachineSet.of(0), 5.0)
    trace.close()
    trace.close()
    text = path.read_text()
    assert text.endswith("6 5.000000 machine_state m0 jw0!1\n")
    assert "# End of events" not in text


def test_job_colours_are_batsims_64_each_once_in_64_jobs() -> None:
    """generate_colors(64): hue i * 5.625 degrees; Batsim shuffles them, ours are fixed."""
    assert sorted(JOB_COLOURS) == sorted(job_colours()) and len(set(JOB_COLOURS)) == 64
    assert job_colours()[16] == '"0.500000 1.000000 0.000000"'  # hue 90
    assert all(a != b for a, b in zip(JOB_COLOURS, JOB_COLOURS[1:], strict=False))
    real = re.findall(r'^5 j\S+ machine_state "\S+" ("[0-9. ]+")$', REAL.read_text(), re.M)
    assert len(real) == 18 and set(real) <= set(JOB_COLOURS)


def test_the_65th_job_takes_the_first_colour_again(tmp_path: Path) -> None:
    path = tmp_path / "t.trace"
    with PajeTraceWriter(path, ["a"]) as trace:
        for i in range(65):
            trace.job_started(f"w0!{i}", MachineSet.of(0), float(i))
            trace.job_ended(f"w0!{i}", MachineSet.of(0), i + 0.5)
    values = [line for line in _events(path) if line.startswith("5 ")]
    assert len(values) == 65 and trace.nb_jobs == 65
    assert values[64].endswith(JOB_COLOURS[0]) and values[0].endswith(JOB_COLOURS[0])
