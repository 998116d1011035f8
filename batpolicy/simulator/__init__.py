"""The embedded simulator: Batsim 4.2.1 at the message level, so policies run without Batsim.

:class:`Simulator` is a stand-in for Batsim: it reads the same inputs (workloads, a
platform, ``--events`` files, Batsim's flags as :class:`SimOptions`), keeps Batsim's own
bookkeeping, sends the typed requests Batsim 4.2.1 would send and applies the typed
replies, aborting (:class:`~batpolicy.errors.InvalidDecision`) where Batsim aborts. The
scheduler is any callable ``Request -> Reply``: ``Dispatcher(policy).handle`` for
``batpolicy simulate``, a socket round-trip for ``batpolicy fake-batsim``, or a recorded
conversation (the transcript fidelity tests replay all 16 recordings of real Batsim
4.2.1 and get the same messages and the same ``jobs.csv``).

Its parts: :mod:`.core` (the clock and heap, ``schedule``/``step`` and the
tie-break priorities of one instant), :mod:`.actors`, :mod:`.books` and
:mod:`.records` (Batsim's actors' wake-ups, its jobs, profiles and machines),
:mod:`.instant` (the once-per-instant hook that moves ends), :mod:`.delays` (message
latencies), :mod:`.json_quirks` (Batsim's JSON quirks), :mod:`.options` (Batsim's flags);
then one folder per part: :mod:`.engine` (the :class:`Simulator` of
:mod:`.engine.simulator` built from :mod:`.engine.parts`, Batsim's server, checks and
application of decisions, records, and the zero-latency driver), :mod:`.energy`
(Batsim's ``-E``: power states, SimGrid's host-energy plugin, the energy outputs),
:mod:`.jobmodels` (the job-model interface, the one registry open to plug-ins, the
built-in models, SimGrid's parallel tasks in :mod:`.jobmodels.ptask`), :mod:`.latency`
(the driver for platforms whose links take time: Batsim's actors, server loop and
submitters) and :mod:`.pybatsim` (pybatsim schedulers in-process). :mod:`.run` makes one
run as ``simulate`` and ``fake-batsim`` do; the records and totals a run leaves are
:mod:`batpolicy.io.result`'s. What the simulator does not model is listed in
docs/simulator.md.
"""

from types import MappingProxyType

from batpolicy.lazy import lazy_getattr

#: Public name -> submodule that defines it, loaded on first access (PEP 562), so that
#: ``batpolicy --help`` (which imports this package) does not load the simulator.
_LAZY = MappingProxyType({
    **dict.fromkeys(("CALL", "COMPLETION", "END_OF_INPUT", "EXTERNAL", "SUBMISSION",
                     "EventQueue"), "core"),
    **dict.fromkeys(("Scheduler", "Simulator"), "engine.simulator"),
    **dict.fromkeys(("JobModel", "PlacementModel", "ProfileModel", "SpeedScaledModel"),
                    "jobmodels.base"),
    **dict.fromkeys(("JOB_MODELS", "make_job_model"), "jobmodels.registry"),
    "InstantModel": "instant",
    "SimOptions": "options",
    **dict.fromkeys(("JobRecord", "SimResult"), "batpolicy.io.result"),
})

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY)
