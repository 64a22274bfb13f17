"""Read-only byte streams the WARC reader reads through: one that replays the bytes
already read to sniff a file's format, one that is a window on a byte range of a
file. Both count positions as warcio's iterators need them."""

from __future__ import annotations

from typing import BinaryIO

BLOCK = 64 * 1024  # bytes per read


class ReplayStream:
    """A read-only stream that replays ``head`` (already read to sniff the format)
    before the rest of ``raw``, with ``tell()`` counting from the file's start."""

    def __init__(self, head: bytes, raw: BinaryIO):
        self._head = head
        self._raw = raw
        self._pos = 0

    def read(self, size: int = -1) -> bytes:
        if self._pos < len(self._head):
            take = len(self._head) - self._pos if size is None or size < 0 else min(size, len(self._head) - self._pos)
            data = self._head[self._pos : self._pos + take]
            if size is None or size < 0:
                data += self._raw.read()
        else:
            data = self._raw.read(size)
        self._pos += len(data)
        return data

    def tell(self) -> int:
        return self._pos

    def head_bytes(self) -> bytes:
        return self._head

    def seekable(self) -> bool:
        try:
            return bool(self._raw.seekable())
        except Exception:
            return False

    def seek(self, pos: int) -> None:
        """Absolute positions only; needs a seekable ``raw``."""
        self._raw.seek(max(pos, len(self._head)))
        self._pos = pos


class RangeStream:
    """A read-only view of ``raw`` from byte ``start`` for ``size`` bytes (``size`` < 0:
    to the end), positions counted from ``start``; seekable when ``raw`` is, so that
    reading resynchronises after a fault inside the range as inside a file."""

    def __init__(self, raw: BinaryIO, start: int, size: int):
        self._raw = raw
        self._start = start
        self._size = size
        self._pos = 0
        if start:
            raw.seek(start)

    def read(self, size: int = -1) -> bytes:
        if self._size >= 0:
            left = max(self._size - self._pos, 0)
            size = left if size is None or size < 0 or size > left else size
        data = self._raw.read(size)
        self._pos += len(data)
        return data

    def tell(self) -> int:
        return self._pos

    def seekable(self) -> bool:
        return bool(self._raw.seekable())

    def seek(self, pos: int, whence: int = 0) -> int:
        if whence == 1:
            pos += self._pos
        elif whence == 2:
            if self._size < 0:
                self._pos = self._raw.seek(0, 2) - self._start
                return self._pos
            pos += self._size
        self._raw.seek(self._start + pos)
        self._pos = pos
        return pos


def read_upto(stream, size: int) -> bytes:
    """Up to ``size`` bytes (fewer only at the end of the stream)."""
    chunks, total = [], 0
    while total < size:
        block = stream.read(size - total)
        if not block:
            break
        chunks.append(block)
        total += len(block)
    return b"".join(chunks)
