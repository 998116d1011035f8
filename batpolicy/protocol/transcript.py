"""Record and replay whole Batsim conversations.

A transcript holds one record per exchange, in order:
``{"batsim": <message Batsim sent>, "scheduler": <reply it got, or None>}``, where both
messages are the JSON objects of :func:`~batpolicy.protocol.codec.request_to_obj` and
:func:`~batpolicy.protocol.codec.reply_to_obj`. ``None`` marks a request whose reply
never came (the scheduler failed on it).

Two on-disk forms, read alike by :func:`read_transcript`:

- our recordings: a stream of msgpack maps, written by :class:`TranscriptWriter` and
  flushed after every record, so a crash loses nothing already exchanged; a file cut in
  the middle of a record yields every complete record and stops, with a warning;
- the shared recordings of real Batsim (``*.jsonl``): one JSON object per line.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Self

import msgpack

from batpolicy.errors import BatpolicyError, ConfigError, InputError

try:
    from orjson import loads as _json_loads
except ImportError:  # pragma: no cover - orjson is a declared dependency
    from json import loads as _json_loads

__all__ = ["TranscriptWriter", "read_transcript"]

log = logging.getLogger(__name__)

Record = tuple[dict[str, Any], dict[str, Any] | None]

_JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson", ".json"})
_MSGPACK_SUFFIXES = frozenset({".msgpack", ".mpk", ".msgp"})


class TranscriptWriter:
    """Append exchanges to a msgpack transcript at ``path``, flushing every record.

    The file is created (or truncated) on :meth:`open`, on entering a ``with`` block,
    or at the first :meth:`write`. With ``fsync=True`` each record also reaches the disk
    before :meth:`write` returns (survives a power cut, costs a disk sync per message).
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self.records = 0
        self._file: BinaryIO | None = None
        self._packer: msgpack.Packer | None = None
        self._closed = False

    def open(self) -> Self:
        """Create the file (truncating any previous one); return self."""
        self._ensure_open()
        return self

    def _ensure_open(self) -> tuple[BinaryIO, msgpack.Packer]:
        if self._closed:
            raise BatpolicyError(f"transcript {self.path} is already closed")
        if self._file is None or self._packer is None:
            try:
                self._file = self.path.open("wb")
            except OSError as exc:
                raise ConfigError(f"cannot write transcript {self.path}: {exc}") from exc
            self._packer = msgpack.Packer(use_bin_type=True)
        return self._file, self._packer

    def write(self, request: dict[str, Any], reply: dict[str, Any] | None) -> None:
        """Append one exchange (``reply`` None when no reply was sent) and flush it."""
        file, packer = self._ensure_open()
        try:
            data = packer.pack({"batsim": request, "scheduler": reply})
        except (TypeError, ValueError, OverflowError) as exc:
            raise BatpolicyError(f"cannot record exchange #{self.records + 1} in "
                                 f"{self.path}: {exc}") from exc
        try:
            file.write(data)
            file.flush()
            if self.fsync:
                os.fsync(file.fileno())
        except OSError as exc:
            raise ConfigError(f"cannot write transcript {self.path}: {exc}") from exc
        self.records += 1

    def close(self) -> None:
        """Close the file; safe to call twice."""
        if self._file is not None:
            self._file.close()
            self._file = None
            log.debug("transcript %s: %d records", self.path, self.records)
        self._closed = True

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def read_transcript(path: str | os.PathLike[str]) -> Iterator[Record]:
    """Yield ``(batsim message, scheduler reply or None)`` for each exchange in order."""
    path = Path(path)
    reader = _read_jsonl if _is_jsonl(path) else _read_msgpack
    yield from reader(path)


def _is_jsonl(path: Path) -> bool:
    """JSON lines or msgpack: by extension, else by the first byte."""
    suffix = path.suffix.lower()
    if suffix in _JSONL_SUFFIXES:
        return True
    if suffix in _MSGPACK_SUFFIXES:
        return False
    try:
        with path.open("rb") as f:
            head = f.read(64).lstrip()
    except OSError as exc:
        raise InputError(f"cannot read transcript: {exc}", path=str(path)) from exc
    if head[:1] == b"{":
        return True
    if not head or 0x80 <= head[0] <= 0x8F or head[0] in (0xDE, 0xDF):  # msgpack maps
        return False
    raise InputError("neither a msgpack nor a JSON-lines transcript", path=str(path))


def _record(record: Any, path: Path, number: int) -> Record:
    if (type(record) is not dict or record.keys() != {"batsim", "scheduler"}
            or type(record["batsim"]) is not dict
            or not (record["scheduler"] is None or type(record["scheduler"]) is dict)):
        raise InputError("a record must be {'batsim': <object>, 'scheduler': <object or null>}",
                         path=str(path), line=number)
    return record["batsim"], record["scheduler"]


def _read_msgpack(path: Path) -> Iterator[Record]:
    try:
        f = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read transcript: {exc}", path=str(path)) from exc
    with f:
        unpacker = msgpack.Unpacker(f, raw=False)
        records = iter(unpacker)
        number = complete = 0  # complete: bytes up to the end of the last whole record
        while True:
            try:
                record = next(records)
            except StopIteration:
                break
            except Exception as exc:  # msgpack's FormatError, StackError, ValueError...
                raise InputError(f"corrupt msgpack record: {exc}", path=str(path),
                                 line=number + 1) from exc
            number += 1
            complete = unpacker.tell()
            yield _record(record, path, number)
        size = os.fstat(f.fileno()).st_size
        if complete < size:  # (tell() after the failed last read is not reliable)
            log.warning("%s: truncated after %d complete records (%d trailing bytes ignored)",
                        path, number, size - complete)


def _read_jsonl(path: Path) -> Iterator[Record]:
    try:
        f = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read transcript: {exc}", path=str(path)) from exc
    with f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = _json_loads(line)
            except ValueError as exc:
                if not line.endswith(b"\n"):  # the last line, cut by a crash
                    log.warning("%s: truncated after line %d", path, number - 1)
                    return
                raise InputError(f"not valid JSON: {exc}", path=str(path), line=number) from exc
            yield _record(record, path, number)
