"""Batsim 5's batprotocol, a second codec behind the typed events of :mod:`batpolicy.protocol`.

Batsim 5 speaks batprotocol (a FlatBuffers schema) with its External Decision Components
(EDCs); over ZeroMQ it opens with an initialisation message and a hello exchange
(:mod:`.handshake`), then sends FlatBuffers JSON (or binary) messages. :mod:`.codec`
maps them to and from the Batsim 4 typed events and decisions, so every policy runs
unchanged; :mod:`.wire` is what ``batpolicy serve --batsim 5`` drives. The schema
followed is batprotocol 3f3be00, the one Batsim's development snapshot ed55a974 builds
with (``docs/batsim5.md``).
"""
