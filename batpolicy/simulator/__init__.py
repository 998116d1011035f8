"""The embedded simulator: Batsim 4.2.1 at the message level, so policies run without Batsim.

:class:`Simulator` is a stand-in for Batsim: it reads the same inputs (workloads, a
platform, ``--events`` files, Batsim's flags as :class:`SimOptions`), keeps Batsim's own
bookkeeping, sends the typed requests Batsim 4.2.1 would send and applies the typed
replies, aborting (:class:`~batpolicy.errors.InvalidDecision`) where Batsim aborts. The
scheduler is any callable ``Request -> Reply``: ``Dispatcher(policy).handle`` for
``batpolicy simulate``, a socket round-trip for ``batpolicy fake-batsim``, or a recorded
conversation (the transcript fidelity tests replay all 16 recordings of real Batsim
4.2.1 and get the same messages and the same ``jobs.csv``).

Modules: :mod:`.core` (the clock and heap, ``schedule``/``step`` and the tie-break
priorities of one instant), :mod:`.engine` (the one engine: parts plus a driver),
:mod:`.parts` (the parts and their wiring), :mod:`.books` and :mod:`.bookkeeping`
(Batsim's jobs, profiles with garbage collection, machines), :mod:`.server`
(Batsim's reactions), :mod:`.decisions` and :mod:`.validation` (Batsim's checks and
application of decisions), :mod:`.accounting` (records and totals),
:mod:`.zero_latency` and :mod:`.latency` (the two drivers; the latency driver's actors
in :mod:`.latency_actors`, its server loop in :mod:`.latency_server`, its submitters in
:mod:`.submitters`), :mod:`.message_clock` (Batsim's clock between the messages of one
zero-latency instant), :mod:`.energy` with :mod:`.host_energy` and
:mod:`.energy_tracers` (Batsim's ``-E``: power states, SimGrid's host-energy plugin,
the energy outputs), :mod:`.registry` (the one job-model registry, open to plug-ins),
:mod:`.models`, :mod:`.coalloc_models` and :mod:`.ptask` (job models; ``ptask`` is
SimGrid's parallel-task model with Batsim's messages in it), :mod:`.instant` (the
once-per-instant hook that moves ends), :mod:`.options`; the records and totals a run
leaves are :mod:`batpolicy.io.result`'s. What the simulator does not model
is listed in docs/simulator.md.
"""

from types import MappingProxyType

from batpolicy.lazy import lazy_getattr

#: Public name -> submodule that defines it, loaded on first access (PEP 562), so that
#: ``batpolicy --help`` (which imports this package) does not load the simulator.
_LAZY = MappingProxyType({
    **dict.fromkeys(("CALL", "COMPLETION", "END_OF_INPUT", "EXTERNAL", "SUBMISSION",
                     "EventQueue"), "core"),
    **dict.fromkeys(("Scheduler", "Simulator"), "engine"),
    **dict.fromkeys(("JobModel", "PlacementModel", "ProfileModel", "SpeedScaledModel"),
                    "models"),
    **dict.fromkeys(("JOB_MODELS", "make_job_model"), "registry"),
    "InstantModel": "instant",
    "SimOptions": "options",
    **dict.fromkeys(("JobRecord", "SimResult"), "batpolicy.io.result"),
})

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY)
