"""Batsim 5's opening: the initialisation message, then the hellos.

Over ZeroMQ (Batsim ed55a974 ``src/edc.cpp``, ``ExternalDecisionComponent::init``),
Batsim first sends one binary message: ``flags`` (uint32), ``data_size`` (uint32), both
in the sender's native byte order, then ``data_size`` bytes of initialisation data (the
``<init-str>`` or ``<init-file>`` of ``--edc-socket-str`` / ``--edc-socket-file``).
The EDC acknowledges it with an *empty* message. ``flags`` is 0x1 for FlatBuffers
binary, 0x2 for FlatBuffers JSON (``test/edc-lib/batsim_edc.h``).

Batsim v5.0.0-rc2 (``src/edc.cpp``) shortened this: its initialisation message is
``init_size`` (uint32) then the data, and the EDC answers it with ``flags`` (uint32, the
format the EDC chose) followed by a message holding its EDCHelloEvent; there is no
BatsimHelloEvent. :func:`parse_init` tells the two apart (a snapshot message is at least
8 bytes and starts with flags 1 to 3; an rc2 message starts with its own size minus 4).

In the snapshot, Batsim then sends a message holding one BatsimHelloEvent and the EDC
answers with one EDCHelloEvent naming itself and the simulation features it wants;
these features are what Batsim 4 took on its command line (``--enable-dynamic-jobs`` and
the like). Only then does Batsim send SimulationBeginsEvent (``src/server.cpp``,
``server_on_edc_hello``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from batpolicy.errors import ConfigError, ProtocolError
from batpolicy.protocol.batprotocol import _schema as s

__all__ = ["FEATURES", "FORMAT_BINARY", "FORMAT_JSON", "BATPROTOCOL_VERSION", "EdcIdentity",
           "InitMessage", "encode_init", "parse_init"]

#: ``batsim_edc_init`` flags (``batsim_edc.h``).
FORMAT_BINARY, FORMAT_JSON = 0x1, 0x2
#: The batprotocol version this codec follows (batprotocol 3f3be00's meson version).
BATPROTOCOL_VERSION = "0.1.0"
#: The hello's feature flags (``EDCRequestedSimulationFeatures``), each with the Batsim 4
#: option it replaces.
FEATURES = {
    "dynamic_registration": "--enable-dynamic-jobs",
    "profile_reuse": "--enable-profile-reuse",
    "acknowledge_dynamic_jobs": "--acknowledge-dynamic-jobs",
    "forward_profiles_on_job_submission": "--forward-profiles-on-submission",
    "forward_profiles_on_jobs_killed": "(none)",
    "forward_profiles_on_simulation_begins": "(Batsim 4 always sent profiles)",
    "forward_unknown_external_events": "--forward-unknown-events",
}
#: Features Batsim ed55a974 aborts on ("unimplemented", ``server_on_edc_hello``).
UNIMPLEMENTED_FEATURES = frozenset({"forward_profiles_on_job_submission",
                                    "forward_profiles_on_jobs_killed",
                                    "forward_profiles_on_simulation_begins",
                                    "forward_unknown_external_events"})
_HEADER = struct.Struct("=II")
_SIZE = struct.Struct("=I")


def rc2_hello_prefix() -> bytes:
    """What precedes the hello message in an rc2 EDC's answer: the JSON format flag."""
    return _SIZE.pack(FORMAT_JSON)


@dataclass(frozen=True)
class InitMessage:
    """Batsim's initialisation message: format flags and the EDC's init data.

    ``rc2`` marks the v5.0.0-rc2 form, where Batsim sends no flags (the EDC chooses).
    """

    flags: int
    data: bytes
    rc2: bool = False

    @property
    def json(self) -> bool:
        """True when Batsim speaks FlatBuffers JSON."""
        return bool(self.flags & FORMAT_JSON)


def parse_init(raw: bytes) -> InitMessage | None:
    r"""The initialisation message in ``raw``, or None if ``raw`` is not one.

    >>> parse_init(b"\x02\x00\x00\x00\x03\x00\x00\x00abc")
    InitMessage(flags=2, data=b'abc', rc2=False)
    >>> parse_init(b"\x02\x00\x00\x00ab")
    InitMessage(flags=2, data=b'ab', rc2=True)
    >>> parse_init(b'{"now": 0}') is None
    True
    """
    if len(raw) >= _HEADER.size:
        flags, size = _HEADER.unpack_from(raw)
        if size == len(raw) - _HEADER.size and 0 < flags <= (FORMAT_BINARY | FORMAT_JSON):
            return InitMessage(flags, raw[_HEADER.size:])
    if len(raw) >= _SIZE.size and _SIZE.unpack_from(raw)[0] == len(raw) - _SIZE.size:
        return InitMessage(FORMAT_JSON, raw[_SIZE.size:], rc2=True)
    return None


def encode_init(flags: int, data: bytes = b"") -> bytes:
    """The initialisation message Batsim sends (for a fake Batsim 5).

    >>> parse_init(encode_init(FORMAT_JSON, b"x"))
    InitMessage(flags=2, data=b'x', rc2=False)
    """
    return _HEADER.pack(flags, len(data)) + data


@dataclass(frozen=True)
class EdcIdentity:
    """What our EDCHelloEvent says: who we are and which features we request."""

    name: str
    version: str
    commit: str = ""
    features: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, name: str, version: str, features: Iterable[str] = ()) -> EdcIdentity:
        """Check ``features`` against batprotocol's list; ConfigError naming a bad one."""
        wanted = frozenset(features)
        for feature in sorted(wanted):
            if feature not in FEATURES:
                raise ConfigError(f"unknown Batsim 5 feature {feature!r}; known: "
                                  + ", ".join(FEATURES))
            if feature in UNIMPLEMENTED_FEATURES:
                raise ConfigError(f"Batsim 5 (ed55a974) aborts on feature {feature!r}: "
                                  "it is not implemented there")
        for text, what in ((name, "name"), (version, "version")):
            if "," in text or '"' in text:
                raise ConfigError(f"EDC {what} {text!r} must hold no comma nor double quote")
        return cls(name, version, features=wanted)

    def hello(self) -> s.EDCHelloEvent:
        """Our EDCHelloEvent."""
        return s.EDCHelloEvent(
            batprotocol_version=BATPROTOCOL_VERSION, decision_component_name=self.name,
            decision_component_version=self.version, decision_component_commit=self.commit,
            requested_simulation_features=s.Features(
                **{name: name in self.features for name in FEATURES}))

    def batsim4_config(self) -> dict[str, Any]:
        """The Batsim 4 SIMULATION_BEGINS ``config`` these features amount to."""
        f = self.features
        return {"dynamic-jobs-enabled": "dynamic_registration" in f,
                "dynamic-jobs-acknowledged": "acknowledge_dynamic_jobs" in f,
                "profile-reuse-enabled": "profile_reuse" in f,
                "profiles-forwarded-on-submission": False,
                "forward-unknown-events": False}


def check_json_format(init: InitMessage) -> None:
    """Refuse a binary conversation with a clear error (this codec speaks JSON)."""
    if not init.json:
        raise ProtocolError(
            f"Batsim 5 asks for FlatBuffers binary (init flags {init.flags:#x}); batpolicy "
            "speaks batprotocol's JSON: give Batsim '1' as the <json-format-bool> of "
            "--edc-socket-str/--edc-socket-file")
