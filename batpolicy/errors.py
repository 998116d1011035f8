"""The one exception hierarchy of batpolicy (docs/design.md, "Errors").

Every failure a user can cause or meet is one of these, with a message that names
what and where; nothing else is raised on purpose.
"""

from __future__ import annotations

#: Longest message part echoed from the input: an error is one readable line, even when
#: the offending value is a megabyte-long string (the rest is elided in the middle).
MAX_ECHO = 240


def clip(text: str, limit: int = MAX_ECHO) -> str:
    """``text`` shortened in the middle to about ``limit`` characters, saying how long it was.

    >>> clip("x" * 10, 20)
    'xxxxxxxxxx'
    >>> clip("head " + "7" * 1000 + " tail", 40)
    'head 77777…[1010 chars]…77777 tail'
    """
    if len(text) <= limit:
        return text
    tail = limit // 4
    return f"{text[:limit - tail - 20]}…[{len(text)} chars]…{text[-tail:]}"


class BatpolicyError(Exception):
    """Base of every error batpolicy raises on purpose."""


class ProtocolError(BatpolicyError):
    """A Batsim message that breaks the protocol.

    ``index`` is the position of the offending event in the message (None for the
    envelope), ``field`` the dotted path of the offending field.
    """

    def __init__(self, message: str, *, index: int | None = None, field: str | None = None,
                 event_type: str | None = None) -> None:
        message = clip(message)
        field = clip(field, 120) if field is not None else None
        event_type = clip(event_type, 60) if event_type is not None else None
        #: the message without the place (what :meth:`at` keeps)
        self.detail = message
        self.index = index
        self.field = field
        self.event_type = event_type
        where = []
        if index is not None:
            where.append(f"event #{index}")
        if event_type is not None:
            where.append(event_type)
        if field is not None:
            where.append(f"field '{field}'")
        prefix = f"{', '.join(where)}: " if where else ""
        super().__init__(prefix + message)

    def at(self, index: int) -> ProtocolError:
        """The same error placed at event ``index`` of its message (if it names none).

        >>> str(ProtocolError("submitted twice", field="job_id").at(3))
        "event #3, field 'job_id': submitted twice"
        """
        if self.index is not None:
            return self
        return ProtocolError(self.detail, index=index, field=self.field,
                             event_type=self.event_type)


class InvalidDecision(BatpolicyError):
    """A decision that Batsim would refuse or that would corrupt the schedule."""

    def __init__(self, message: str, *, policy: str | None = None, job_id: str | None = None,
                 resources: str | None = None) -> None:
        self.policy = policy
        self.job_id = job_id
        self.resources = resources
        where = []
        if policy:
            where.append(f"policy '{policy}'")
        if job_id:
            where.append(f"job '{job_id}'")
        if resources:
            where.append(f"resources '{resources}'")
        prefix = f"{', '.join(where)}: " if where else ""
        super().__init__(prefix + message)


class PolicyError(BatpolicyError):
    """A policy raised while handling an event: names the policy, the event and the job."""


class ConfigError(BatpolicyError):
    """Bad command-line option, policy parameter or configuration value."""


class InputError(BatpolicyError):
    """A broken workload, platform or events file: names file, line or job, and field."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 job: str | None = None, field: str | None = None) -> None:
        self.path = path
        self.line = line
        self.job = job
        self.field = field
        self.detail = message
        where = []
        if path:
            where.append(str(path) + (f":{line}" if line is not None else ""))
        if job is not None:
            where.append(f"job '{job}'")
        if field:
            where.append(f"field '{field}'")
        prefix = f"{', '.join(where)}: " if where else ""
        super().__init__(prefix + message)


class PeerTimeout(BatpolicyError):
    """The peer on the socket did not answer within the timeout."""


class PeerLost(PeerTimeout):
    """The peer's connection closed mid-conversation (it stopped, or missed heartbeats).

    A :class:`PeerTimeout` whose wait ended early: commands exit with the same status.
    """


class ReadOnlyError(TypeError):
    """A policy tried to change something it may only read (a set, job or view attribute).

    Deliberately *not* a :class:`BatpolicyError`: the dispatcher turns it, like any
    other exception raised inside a policy, into a :class:`PolicyError` naming the
    policy, the event, and the policy's line that tried the change.
    """
