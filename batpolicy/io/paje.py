"""Batsim's ``_schedule.trace``: the schedule as a Pajé trace, written as the run goes.

Batsim 4.2.1 writes it by default (``--disable-schedule-tracing`` turns it off), with
``export.cpp``'s ``PajeTracer``; this module writes the same bytes:

- the header (``PajeTracer::initialize``): ten ``%EventDef`` blocks (with Batsim's trailing
  spaces), the container types (``root_ct``, ``machine_ct``, ``scheduler_ct``,
  ``killer_ct``), the kill event types ``kk`` (on the killer) and ``km`` (on a machine), the
  ``vu_vt`` variable type (never set), the containers (``m<id>`` per machine, compute
  machines then storage hosts, named after their host), the ``machine_state`` state type
  and its values ``w`` (waiting) and ``l`` (launching, never used: Batsim does not log
  launchings), then every machine set to ``w`` at time 0;
- a job becoming the job a machine shows (``Machines::update_machines_on_job_run``, or the
  end of the job shown before it under compute sharing): the first time, a value
  ``j<job id>`` of colour ``nb_total_jobs % 64`` (``register_new_job``), then
  ``6 <time> machine_state m<id> j<job id>`` per machine, in increasing machine id;
- a job ending (``update_machines_on_job_end``): ``6 <time> machine_state m<id> w`` for each
  of its machines left with no job and not unavailable; a job killed at its walltime or
  whose parallel task was cancelled by a kill (``jobs_execution.cpp``: return codes -1 and
  -2) first gets ``8 <time> kk k "<job id>"`` and ``8 <time> km m<id> "<job id>"`` per
  machine (a killed delay's actor is killed instead: no event);
- the end (``PajeTracer::finalize``, at the end of the simulation): every container
  destroyed, machines then the root. A run stopped by an error has no end (:meth:`close`
  keeps the lines written so far; an aborted Batsim loses what its buffer held).

Times are C's ``%lf`` (six decimals). Under compute sharing a machine shows the first of
its jobs in Batsim's ``std::set<JobPtr>`` (ordered by the jobs' memory addresses); the
writer shows the job started first, the likely order of allocation.

Colours: Batsim makes 64 (hues ``i * 360 / 64`` at full saturation and value,
``generate_colors``) and shuffles them with an unseeded ``std::random_device``
(``shuffle_colors``): every Batsim run colours its jobs differently. The writer uses the
same 64 colours in a fixed order (:data:`JOB_COLOURS`), so that a run is reproducible.

Runtime complexity: O(machines) for the header and the end, O(machines of the job) per
start and end; nothing is kept per job without compute sharing.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence

from batpolicy.io.outputs import RowFile

__all__ = ["HEADER", "JOB_COLOURS", "PajeTraceWriter", "hsv_to_rgb", "job_colours",
           "trace_header"]

#: The event definitions, as ``PajeTracer::initialize`` writes them (trailing spaces too).
HEADER = (
    "%EventDef PajeDefineContainerType 1\n% Type string\n% Alias string\n% Name string\n"
    "%EndEventDef\n\n"
    "%EventDef PajeCreateContainer 2\n% Time date \n% Type string  \n% Alias string \n"
    "% Name string   \n% Container string  \n%EndEventDef\n\n"
    "%EventDef PajeDestroyContainer 3\n% Time date\n% Name string \n% Type string\n"
    "%EndEventDef\n\n"
    "%EventDef PajeDefineStateType 4\n% Alias string \n% Type string \n% Name string \n"
    "%EndEventDef\n\n"
    "%EventDef PajeDefineEntityValue 5\n% Alias string  \n% Type string  \n"
    "% Name string  \n% Color color \n%EndEventDef\n\n"
    "%EventDef PajeSetState 6\n% Time date  \n% Type string  \n% Container string  \n"
    "% Value string  \n%EndEventDef \n\n"
    "%EventDef PajeDefineEventType 7\n% Type string\n% Alias string\n% Name string\n"
    "%EndEventDef\n\n"
    "%EventDef PajeNewEvent 8\n% Time date\n% Type string\n% Container string\n"
    "% Value string\n%EndEventDef\n\n"
    "%EventDef PajeDefineVariableType 9\n% Type string\n% Alias string\n% Name string\n"
    "% Color string\n%EndEventDef\n\n"
    "%EventDef PajeSetVariable 10\n% Time date\n% Type string\n% Container string\n"
    "% Value double\n%EndEventDef\n\n"
    "# Container types creation\n"
    '1 0 root_ct "Machines"\n1 root_ct machine_ct "Machine"\n'
    '1 0 scheduler_ct "Scheduler"\n1 scheduler_ct killer_ct "Killer"\n\n'
    "# Event types creation\n"
    '7 killer_ct kk "Job kill"\n7 machine_ct km "Job kill"\n\n'
    "# Variable types creation\n"
    '9 scheduler_ct vu_vt "Utilization" "0.0 0.5 0.0"\n\n'
    "# Containers creation\n"
)

_STATES = ('# States creation\n4 machine_state machine_ct "Machine state"\n\n'
           "# Creation of the different values the machine state can be\n"
           '5 w machine_state "Waiting" "0.0 0.0 0.0"\n'
           '5 l machine_state "Launching" "0.3 0.3 0.3"\n\n'
           "# Begin of events\n")

#: How many colours Batsim makes (``PajeTracer``'s constructor: ``generate_colors(64)``).
NB_COLOURS = 64
#: The step through Batsim's hue-ordered colours giving our fixed order: odd, so every
#: colour comes once in 64 jobs, and near 64 / golden ratio, so that jobs one, two or
#: three apart have far hues.
_COLOUR_STEP = 39


def hsv_to_rgb(h: float, s: float, v: float) -> tuple[float, float, float]:
    """``PajeTracer::hsv_to_rgb``: hue in degrees, saturation and value in [0, 1].

    >>> hsv_to_rgb(90.0, 1.0, 1.0)
    (0.5, 1.0, 0.0)
    """
    if s == 0:
        return v, v, v
    h /= 60
    i = math.floor(h)
    f = h - i
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    return ((v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v))[i] if i < 5 else (v, p, q)


def job_colours(count: int = NB_COLOURS) -> list[str]:
    """Batsim's job colours before its shuffle (``generate_colors``): ``"r g b"`` quoted.

    >>> job_colours(4)[:2]
    ['"1.000000 0.000000 0.000000"', '"0.500000 1.000000 0.000000"']
    """
    step = 360.0 / count
    colours = []
    for i in range(count):
        r, g, b = hsv_to_rgb(i * step, 1.0, 1.0)
        colours.append(f'"{r:f} {g:f} {b:f}"')
    return colours


def _fixed_order(colours: list[str]) -> tuple[str, ...]:
    return tuple(colours[i * _COLOUR_STEP % len(colours)] for i in range(len(colours)))


#: The colours in the order jobs get them: Batsim's 64, every 39th (see the module doc).
JOB_COLOURS = _fixed_order(job_colours())


def trace_header(machine_names: Sequence[str], time: float = 0.0) -> str:
    """Everything ``PajeTracer::initialize`` writes, machines set waiting at ``time``.

    >>> trace_header(["a"]).splitlines()[-13:-10]
    ['2 0.000000 machine_ct m0 "a" root', '2 0.000000 scheduler_ct sc "Scheduler" 0', \
'2 0.000000 killer_ct k "Killer" sc']
    """
    at = f"{time:f}"
    parts = [HEADER, f'2 {at} root_ct root "Machines" 0\n']
    parts += [f'2 {at} machine_ct m{i} "{name}" root\n' for i, name in enumerate(machine_names)]
    parts.append(f'2 {at} scheduler_ct sc "Scheduler" 0\n'
                 f'2 {at} killer_ct k "Killer" sc\n\n')
    parts.append(_STATES)
    parts += [f"6 {at} machine_state m{i} w\n" for i in range(len(machine_names))]
    return "".join(parts)


class PajeTraceWriter(RowFile):
    """Writes ``_schedule.trace`` as the run goes: header now, a few lines per job event.

    ``machine_names`` are Batsim's machines in id order (compute machines, then storage
    hosts). ``sharing``: jobs may share machines (``--enable-compute-sharing``), so each
    machine's jobs are kept to know which one it shows. Lines go through a buffered file:
    what was written is on disk after :meth:`close` whatever stopped the run;
    :meth:`finish` writes the end first, as Batsim does at the end of a simulation.
    """

    def __init__(self, path: str | os.PathLike[str], machine_names: Sequence[str], *,
                 sharing: bool = False, buffering: int = 1 << 16) -> None:
        super().__init__(path, trace_header(machine_names), buffering=buffering)
        self.nb_machines = len(machine_names)
        self.nb_jobs = 0  #: jobs given a colour (Batsim's ``nb_total_jobs``)
        # compute sharing: machine -> its jobs (start rank, id); job -> start rank
        self._shows: dict[int, list[tuple[int, str]]] | None = {} if sharing else None
        self._rank: dict[str, int] = {}
        self._registered: set[str] = set()

    def _value(self, job_id: str) -> str:
        """The job's state value; its definition first if it is new (``register_new_job``)."""
        if self._shows is not None:
            if job_id in self._registered:
                return "j" + job_id
            self._registered.add(job_id)
        colour = JOB_COLOURS[self.nb_jobs % NB_COLOURS]
        self.nb_jobs += 1
        self._write(f'5 j{job_id} machine_state "{job_id}" {colour}\n')
        return "j" + job_id

    def _write(self, text: str) -> None:
        if self._file is None:
            raise ValueError(f"{self.path}: writer is closed")
        self._file.write(text)

    def job_started(self, job_id: str, machines: Iterable[int], now: float) -> None:
        """The job starts on ``machines`` at ``now`` (``update_machines_on_job_run``)."""
        shows = self._shows
        if shows is not None:
            self._shared_start(job_id, machines, now)
            return
        head = f"6 {now:f} machine_state m"
        tail = None
        lines = []
        for m in machines:
            if tail is None:
                tail = f" {self._value(job_id)}\n"
            lines.append(f"{head}{m}{tail}")
        self._write("".join(lines))

    def _shared_start(self, job_id: str, machines: Iterable[int], now: float) -> None:
        shows = self._shows
        assert shows is not None
        rank = self._rank[job_id] = len(self._rank)
        for m in machines:
            jobs = shows.setdefault(m, [])
            jobs.append((rank, job_id))  # ranks grow: the list stays sorted
            if len(jobs) == 1:
                self._write(f"6 {now:f} machine_state m{m} {self._value(job_id)}\n")

    def job_ended(self, job_id: str, machines: Iterable[int], now: float, *,
                  unavailable: Iterable[int] = (), kill_events: bool = False) -> None:
        """The job stops on ``machines`` at ``now`` (``update_machines_on_job_end``).

        ``unavailable``: machines of the job now unavailable, which Batsim leaves in their
        state. ``kill_events``: the job reached its walltime, or a kill cancelled its
        parallel task (``PajeTracer::add_job_kill``, one event per machine too).
        """
        at = f"{now:f}"
        lines = []
        if kill_events:
            lines.append(f'8 {at} kk k "{job_id}"\n')
            lines += [f'8 {at} km m{m} "{job_id}"\n' for m in machines]
        down = set(unavailable)
        shows = self._shows
        if shows is None:
            lines += [f"6 {at} machine_state m{m} w\n" for m in machines if m not in down]
            self._write("".join(lines))
            return
        self._write("".join(lines))
        rank = self._rank.pop(job_id, None)
        if rank is None:
            return
        for m in machines:
            jobs = shows.get(m)
            if not jobs:
                continue
            was_top = jobs[0][1] == job_id
            jobs.remove((rank, job_id))
            if not jobs:
                del shows[m]
                if m not in down:
                    self._write(f"6 {at} machine_state m{m} w\n")
            elif was_top:
                self._write(f"6 {at} machine_state m{m} {self._value(jobs[0][1])}\n")

    def finish(self, now: float) -> None:
        """Destroy the containers at ``now`` (``PajeTracer::finalize``) and close."""
        if self._file is None:
            return
        at = f"{now:f}"
        self._file.write("\n# End of events, containers destruction\n"
                         + "".join(f"3 {at} m{i} machine_ct\n" for i in range(self.nb_machines))
                         + f"3 {at} root root_ct\n")
        self.close()

    def flush(self) -> None:
        """Put the lines written so far on disk.

        :meth:`close` closes without the end, as an aborted Batsim leaves the file.
        """
        if self._file is not None:
            self._file.flush()
