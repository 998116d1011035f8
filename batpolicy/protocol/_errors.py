"""msgspec's validation errors as ours: a dotted field path and a message in JSON's words.

msgspec says ``Expected `int`, got `float` - at `$.events[3].data.job.res```; the codec
says ``event #3, JOB_SUBMITTED, field 'data.job.res': expected a JSON integer, got 1.5``.
:func:`explain` does the translation of one error (off the hot path: only once a message
is refused); the codec adds the event's index and type.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from batpolicy.protocol._wire import PATTERN_MEANINGS, FieldError, type_name

__all__ = ["dotted", "explain", "split_path", "value_at"]

_AT = re.compile(r"^(?P<message>.*?) - at `(?P<at>[^`]*)`(?: in `(?P<inside>[^`]*)`)?$", re.S)
_MEMBER = re.compile(r"^Object (?P<what>missing required|contains unknown) field `(?P<name>.*)`$",
                     re.S)
_PATTERN = re.compile(r"^Expected `str` matching regex '(?P<regex>.*)'$", re.S)
_EXPECTED = re.compile(r"^Expected `(?P<want>[^`]*)`(?:, got `(?P<got>[^`]*)`)?(?P<rest>.*)$",
                       re.S)
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")

#: msgspec's type names in JSON's words.
_JSON_NAMES = {"int": "a JSON integer", "float": "a number", "int | float": "a number",
               "str": "a string", "bool": "true or false", "object": "an object",
               "array": "an array", "null": "null"}
_GOT_NAMES = {"int": "number", "float": "number", "str": "string", "bool": "boolean",
              "object": "object", "array": "array", "null": "null"}


def split_path(path: str) -> list[str | int]:
    """Msgspec's ``$.events[3].data.job_id`` as steps.

    >>> split_path("$.events[3].data.job_id")
    ['events', 3, 'data', 'job_id']
    >>> split_path("$")
    []
    """
    steps: list[str | int] = []
    for name, position in _STEP.findall(path[1:]):
        steps.append(name if name else (int(position) if position.isdigit() else "..."))
    return steps


def dotted(steps: list[str | int]) -> str:
    """Steps as our dotted field path.

    >>> dotted(["data", "job_ids", 2]), dotted(["data", "mapping", "..."])
    ('data.job_ids[2]', 'data.mapping[...]')
    """
    text = ""
    for step in steps:
        if isinstance(step, int) or step == "...":
            text += f"[{step}]"
        else:
            text += f".{step}" if text else str(step)
    return text


def value_at(root: Any, steps: list[str | int]) -> Any:
    """The value ``steps`` lead to in a parsed message, or ``None`` if it cannot be reached."""
    value = root
    for step in steps:
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def explain(exc: msgspec.ValidationError, root: Any = None) -> tuple[list[str | int], str]:
    """The steps to the offending member (from ``root``) and a message saying what is wrong.

    ``root`` is the parsed value that was validated, used to show the offending value.

    >>> class S(msgspec.Struct):
    ...     res: int
    >>> try:
    ...     msgspec.json.decode(b'{"res": 1.5}', type=S)
    ... except msgspec.ValidationError as exc:
    ...     explain(exc, {"res": 1.5})
    (['res'], 'expected a JSON integer, got 1.5')
    """
    text = str(exc)
    matched = _AT.match(text)
    message, at, inside = (matched["message"], matched["at"], matched["inside"]) if matched \
        else (text, "$", None)
    key = inside is not None  # "- at `key` in `$.m`": an object key is wrong
    steps = _name_keys(split_path(inside if key else at), root, _EXPECTED.match(message))
    cause = exc.__cause__
    if isinstance(cause, FieldError):  # a schema hook's own check
        if cause.field:
            steps += split_path("$." + cause.field)
        return steps, cause.message
    if isinstance(cause, TypeError | ValueError):  # the interval-set hook
        return steps, str(cause)
    member = _MEMBER.match(message)
    if member:
        steps.append(member["name"])
        missing = member["what"] == "missing required"
        return steps, "missing member" if missing else "unexpected member"
    return steps, ("object key: " if key else "") + _words(message, value_at(root, steps))


def _name_keys(steps: list[str | int], root: Any, expected: re.Match[str] | None
               ) -> list[str | int]:
    """Steps with msgspec's ``[...]`` (a value of an object with free keys) replaced by the key.

    msgspec does not say which member of such an object was wrong; the parsed message
    does: the only member, or the first whose JSON type is the one msgspec got.

    >>> _name_keys(["job_progress", "..."], {"job_progress": {"a": {}, "b": []}},
    ...            _EXPECTED.match("Expected `object`, got `array`"))
    ['job_progress', 'b']
    """
    if "..." not in steps:
        return steps
    got = expected["got"] if expected is not None else None
    named: list[str | int] = []
    value = root
    for step in steps:
        if step == "..." and type(value) is dict:
            keys = [k for k, v in value.items()
                    if len(value) == 1 or (got and _GOT_NAMES.get(got) == type_name(v))]
            step = keys[0] if keys else step
        named.append(step)
        value = value_at(value, [step])
    return named


def _words(message: str, value: Any) -> str:
    """One msgspec complaint about a value, in JSON's words."""
    pattern = _PATTERN.match(message)
    if pattern:  # msgspec shows the regex as a repr: "\\Z" for "\Z"
        regex = pattern["regex"].replace("\\\\", "\\")
        return PATTERN_MEANINGS.get(regex, f"does not match {regex}")
    if "1.7976931348623157e+308" in message:
        return f"{value!r} is not a finite number"
    expected = _EXPECTED.match(message)
    if expected is None:  # e.g. "Invalid enum value 'DONE'"
        return message[:1].lower() + message[1:].replace("`", "").replace(" enum ", " ")
    want, got, rest = expected["want"], expected["got"], expected["rest"]
    wanted = _JSON_NAMES.get(want, want)
    if got is None:
        return f"expected {wanted}{rest.replace('`', '')}"
    if want == "int" and type(value) is float:
        return f"expected a JSON integer, got {value!r}"
    return f"expected {wanted}, got {_GOT_NAMES.get(got, type_name(value))}"
