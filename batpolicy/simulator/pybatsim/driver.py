"""A pybatsim scheduler inside the simulator's process: no Batsim, no socket, no ZeroMQ.

pybatsim 3.2.1's ``batsim.batsim.Batsim`` is the scheduler's whole view of Batsim: it
reads one message from its ``NetworkHandler`` (``batsim/network.py``: a ZeroMQ REP
socket), sets ``now``, calls the scheduler's handlers event by event (``onJobSubmission``,
``onJobCompletion``, ``onRequestedCall``, ...), collects what they ask through ``bs``
(``execute_jobs``, ``reject_jobs``, ``wake_me_up_at``, ...; stamped with ``bs.time()``,
which ``consume_time`` advances) and sends ``{"now", "events"}`` back.

:class:`PybatsimScheduler` is the simulator's ``Request -> Reply`` callable, exactly what
``batpolicy fake-batsim`` puts at the end of its socket: it encodes the typed request
with our codec to the JSON Batsim 4.2.1 would send, hands it to that unmodified ``Batsim``
object whose network is a :class:`_Pipe` (one message in, one reply out, in memory),
and decodes the JSON reply with our codec. The reply's decisions then go through the one
checker (:meth:`Dispatcher.shadow <batpolicy.scheduler.dispatch.Dispatcher.shadow>`, as
for our own policies) before the simulator applies them with Batsim's own checks. Time is
pybatsim's: the reply's ``now`` and each decision's timestamp are what ``bs.time()`` and
``bs.consume_time()`` made them.

``Batsim.__init__`` builds its ``NetworkHandler`` by name from its module's globals;
the driver runs that same ``__init__`` with the name bound to its pipe (a copy of the
module's globals, nothing of pybatsim modified). Everything else is pybatsim's code.

Errors: an exception raised by the scheduler (or by pybatsim on its behalf, e.g. an
unimplemented ``onJobsKilled``) becomes one :class:`~batpolicy.errors.PolicyError`
naming the scheduler, the handler, the event, the time and the scheduler's line; an
invalid decision one :class:`~batpolicy.errors.InvalidDecision` naming the scheduler,
the job, the event answered and the time.
"""

from __future__ import annotations

import json
import linecache
import sysconfig
import types
from pathlib import Path
from typing import Any

from batpolicy.errors import BatpolicyError, InvalidDecision, PolicyError, ProtocolError, clip
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import decode_reply, request_to_obj
from batpolicy.scheduler.contract import Policy
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.scheduler.state import ClusterState

__all__ = ["PybatsimScheduler"]

_STDLIB = sysconfig.get_paths()["stdlib"]


class _Pipe:
    """pybatsim's ``NetworkHandler`` (``batsim/network.py``) in memory: no ZeroMQ at all.

    Same methods as the original; :meth:`recv` hands out the one message the driver put
    in :attr:`incoming`, :meth:`send` keeps the reply as ``NetworkHandler.send`` puts it
    on the wire (``json.dumps``).
    """

    def __init__(self, socket_endpoint: str = "inproc", timeout: Any = None,
                 type: Any = None) -> None:  # noqa: A002 - pybatsim's keyword
        self.socket_endpoint = socket_endpoint
        self.timeout = timeout
        self.incoming: Any = None
        self.outgoing: str | None = None
        self.closed = False

    def __call__(self, socket_endpoint: str, timeout: Any = None, type: Any = None) -> _Pipe:
        """What ``Batsim.__init__`` calls in place of ``NetworkHandler(...)``: this pipe."""
        return self

    def bind(self) -> None:
        """Nothing to bind."""

    def connect(self) -> None:
        """Nothing to connect."""

    def close(self) -> None:
        """Called by pybatsim after SIMULATION_ENDS."""
        self.closed = True

    def recv(self, blocking: bool = False) -> Any:
        """The message the driver is delivering (pybatsim's ``recv``, already parsed)."""
        message, self.incoming = self.incoming, None
        if message is None:  # pybatsim would call onDeadlock and wait forever
            raise RuntimeError("pybatsim asked for a message the simulator did not send")
        return message

    def recv_string(self, blocking: bool = False) -> str:
        """The message as text."""
        return json.dumps(self.recv(blocking))

    def send(self, msg: Any) -> None:
        """Keep the reply as pybatsim's ``NetworkHandler.send`` serialises it."""
        self.outgoing = json.dumps(msg)

    def send_string(self, msg: str) -> None:
        """Keep a reply already serialised."""
        self.outgoing = msg


class _Observer(Policy):
    """Decides nothing: the dispatcher only keeps the scheduler's state and checks replies."""

    name = "pybatsim"


def _in_process_batsim(module: Any, pipe: _Pipe) -> type:
    """The ``Batsim`` class, its ``__init__`` building ``pipe``, not a ZeroMQ socket."""
    base = module.Batsim
    original = base.__init__
    if original.__code__.co_freevars:  # not the 3.2 constructor this was written against
        raise BatpolicyError("this pybatsim's Batsim.__init__ cannot be run in-process")
    init = types.FunctionType(original.__code__, {**vars(module), "NetworkHandler": pipe},
                              original.__name__, original.__defaults__, original.__closure__)
    init.__kwdefaults__ = original.__kwdefaults__
    return type("InProcessBatsim", (base,), {"__init__": init, "__module__": __name__})


class PybatsimScheduler:
    """The simulator's scheduler callable around one pybatsim scheduler object.

    ``scheduler`` is what :func:`~.loader.load_scheduler` returns; ``label``
    names it in errors (``pybatsim:easyBackfill``); ``protect`` wraps it in pybatsim's
    ``ValidatingMachine`` (``pybatsim -p``); ``paranoid`` checks the state's invariants
    after every message. One instance runs one simulation.
    """

    def __init__(self, scheduler: Any, label: str, *, protect: bool = False,
                 paranoid: bool = False, state: ClusterState | None = None) -> None:
        from batpolicy.simulator.pybatsim.loader import import_pybatsim

        self.module = import_pybatsim()
        self.scheduler = scheduler
        self.label = label
        self.protect = protect
        self.pipe = _Pipe()
        self.bs: Any = None
        self.dispatcher = Dispatcher(_Observer(), state, paranoid=paranoid)
        self.nb_decisions = 0
        self._message: Any = None

    def __call__(self, request: t.Request) -> t.Reply:
        """Deliver one message to pybatsim, check its reply, return it typed."""
        # The JSON Batsim would send, as the fresh objects json.loads would give pybatsim
        # (it keeps and changes the profiles and job dicts it gets): request_to_obj builds
        # new dicts and lists all the way down (msgspec.to_builtins copies), so no JSON
        # round trip is needed. Our simulator's requests are valid by construction (the
        # transcript tests compare them with Batsim's), so they are not checked again.
        message = request_to_obj(request)
        self._message = message
        pipe = self.pipe
        pipe.incoming, pipe.outgoing = message, None
        try:
            if self.bs is None:  # Batsim's constructor reads SIMULATION_BEGINS and answers
                from batsim.validatingmachine import ValidatingMachine

                batsim = _in_process_batsim(self.module, pipe)
                self.bs = batsim(self.scheduler, "inproc://batpolicy", None,
                                 validatingmachine=ValidatingMachine if self.protect else None)
            else:
                self.bs.do_next_event()
        except (KeyboardInterrupt, BatpolicyError):
            raise
        except BaseException as exc:  # SystemExit too: a scheduler must not end our process
            raise self._scheduler_error(exc, request) from exc
        if pipe.outgoing is None:
            raise PolicyError(f"{self._who()} sent no reply (at t={request.now})")
        try:
            reply = decode_reply(pipe.outgoing)
        except ProtocolError as exc:
            raise InvalidDecision(f"{self._who()} sent what Batsim refuses: {exc} "
                                  f"({self._answering(request)})", policy=None) from None
        try:
            self.dispatcher.shadow(request, reply, who=self.label)
        except InvalidDecision as exc:
            error = InvalidDecision(f"{exc} ({self._answering(request)})")  # names label
            error.policy, error.job_id, error.resources = self.label, exc.job_id, exc.resources
            raise error from None
        self.nb_decisions += len(reply.decisions)
        return reply

    # ------------------------------------------------------------------ error messages
    def _who(self) -> str:
        return f"pybatsim scheduler '{self.label.removeprefix('pybatsim:')}'"

    def _answering(self, request: t.Request) -> str:
        """``in reply to JOB_SUBMITTED w0!3, ... at t=12.0``: the message answered."""
        names = [_event_name(event) for event in (self._message or {}).get("events", [])]
        shown = ", ".join(names[:3]) + (f", +{len(names) - 3} more" if len(names) > 3 else "")
        return f"in reply to {shown or 'an empty message'} at t={request.now}"

    def _scheduler_error(self, exc: BaseException, request: t.Request) -> PolicyError:
        """One line: scheduler, exception, handler, event, time, the scheduler's own line."""
        handler, event = _handler_and_event(exc)
        events = (self._message or {}).get("events", [])
        if event is not None:
            index = next((i for i, e in enumerate(events) if e is event), None)
            what = f"event #{index} {_event_name(event)}" if index is not None \
                else _event_name(event)
            what = f"while handling {what} at t={request.now}"
        else:
            what = self._answering(request).replace("in reply to", "while handling", 1)
        kind = type(exc).__name__
        detail = f"{kind}: {clip(str(exc), 160)}" if str(exc) else kind
        if isinstance(exc, NotImplementedError) and handler is not None and \
                _is_default_handler(self.module, handler, exc):
            detail = (f"it does not implement {handler}, which pybatsim calls for this event "
                      "(BatsimScheduler's default raises NotImplementedError)")
        elif isinstance(exc, AttributeError) and getattr(exc, "obj", None) is self.bs:
            detail = f"it called bs.{exc.name}, which pybatsim's Batsim does not have"
        in_handler = f" in {handler}" if handler is not None else ""
        return PolicyError(f"{self._who()} failed{in_handler}: {detail} ({what}"
                           f"{_where(exc, self.module)})")


def _event_name(event: Any) -> str:
    """``JOB_SUBMITTED w0!3`` or ``NOTIFY no_more_static_job_to_submit``."""
    if not isinstance(event, dict):
        return "?"
    data = event.get("data") or {}
    detail = data.get("job_id") or data.get("type") or ""
    if not detail and "job_ids" in data:
        detail = ",".join(map(str, data["job_ids"][:3]))
    return f"{event.get('type', '?')} {detail}".strip()


def _frames(exc: BaseException) -> list[tuple[types.FrameType, int]]:
    """The traceback's frames, outermost first, with the line each was at."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _handler_and_event(exc: BaseException) -> tuple[str | None, Any]:
    """The scheduler method pybatsim's message loop called, and the event it was handling.

    pybatsim's ``Batsim._read_bat_msg`` calls one handler per event (its loop variable
    ``event``) between ``onBeforeEvents`` and ``onNoMoreEvents``; ``Batsim.__init__``
    calls ``onAfterBatsimInit`` after the first message.
    """
    frames = [frame for frame, _ in _frames(exc)]
    for i in range(len(frames) - 1, -1, -1):
        name = frames[i].f_code.co_name
        if name not in ("_read_bat_msg", "__init__") or "self" not in frames[i].f_locals \
                or not hasattr(frames[i].f_locals["self"], "_events_to_send"):
            continue
        handler = frames[i + 1].f_code.co_name if i + 1 < len(frames) else None
        event = frames[i].f_locals.get("event") if name == "_read_bat_msg" else None
        if handler in ("onBeforeEvents", "onNoMoreEvents"):
            event = None
        return handler, event
    return None, None


def _is_default_handler(module: Any, handler: str, exc: BaseException) -> bool:
    """Whether the NotImplementedError came from BatsimScheduler's own default handler."""
    default = getattr(module.BatsimScheduler, handler, None)
    code = getattr(default, "__code__", None)
    return code is not None and any(f.f_code is code for f, _ in _frames(exc))


#: batpolicy's own package: never "the scheduler's line".
_OURS = (str(Path(__file__).resolve().parents[1]),)


def _where(exc: BaseException, module: Any) -> str:
    """``, at FILE:LINE `source```: the innermost frame of the scheduler's own code.

    Frames of the standard library, of pybatsim's ``batsim`` package and of batpolicy are
    skipped; a scheduler of pybatsim's bundled ``schedulers`` package is its own code.
    """
    pybatsim = str(Path(module.__file__).resolve().parent)
    found = None
    for frame, line in _frames(exc):
        path = frame.f_code.co_filename
        if path.startswith(("<", _STDLIB, pybatsim, *_OURS)):
            continue
        found = (path, line)
    if found is None:
        return ""
    path, line = found
    source = linecache.getline(path, line).strip()
    try:
        shown = Path(path).relative_to(Path.cwd())
    except ValueError:
        shown = Path(path)
    return f", at {shown}:{line}" + (f" `{clip(source, 120)}`" if source else "")
