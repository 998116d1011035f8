"""A reply without decisions is encoded as the encoder's full path would, byte for byte.

``encode_reply`` writes such a reply (most of serve's replies) around one C call of the
encoder instead of building and checking its message object (:func:`codec._encode`);
for every ``now``, valid or not, it gives the same bytes or the same refusal.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from batpolicy.errors import ProtocolError
from batpolicy.protocol import types as t
from batpolicy.protocol.codec import _FROM_SCHEDULER, _encode, encode_reply


def _full_encode(reply: t.Reply) -> bytes:
    """The encoder's general path: message object, schema check, dump."""
    return _encode(reply.now, tuple(reply.decisions), _FROM_SCHEDULER)


#: Edges of the schema's ``Time`` ([0, 2**53]) and floats whose text differs by writer.
EDGES = [0.0, -0.0, -0.5, -5e-324, 2.0 ** 53, math.nextafter(2.0 ** 53, math.inf), 5e-324,
         1e16, 123456789.125]


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 2 ** 60),
                 st.sampled_from(EDGES), st.booleans()))
def test_an_empty_reply_is_encoded_as_the_full_path_does(now: Any) -> None:
    def outcome(encode: Any) -> bytes | str:
        try:
            return encode(t.Reply(now, ()))  # type: ignore[no-any-return]
        except ProtocolError as exc:
            return str(exc)

    assert outcome(encode_reply) == outcome(_full_encode)
