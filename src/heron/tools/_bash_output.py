"""Bounded text buffers for command output, and the splitter that cuts it into lines."""

from __future__ import annotations

from collections import deque

__all__ = ["HeadTailBuffer", "LineSplitter", "TailBuffer", "cut_marker"]


def cut_marker(count: int) -> str:
    """The line standing in for ``count`` characters of output that were left out."""
    return f"\n[... {count:,} characters cut ...]\n"


class TailBuffer:
    """Keeps the last ``limit`` characters written, counting the ones it dropped."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._chunks: deque[str] = deque()
        self._size = 0
        self.dropped = 0
        """Characters dropped from the front since the last :meth:`take`."""

    def write(self, text: str) -> None:
        """Append ``text``, dropping the oldest characters beyond the limit."""
        if not text:
            return
        if len(text) >= self._limit:
            # One chunk larger than the whole buffer replaces it.
            self.dropped += self._size + len(text) - self._limit
            self._chunks.clear()
            text = text[len(text) - self._limit :] if self._limit else ""
            self._size = 0
        self._chunks.append(text)
        self._size += len(text)
        while self._size > self._limit:
            excess = self._size - self._limit
            first = self._chunks[0]
            if len(first) <= excess:
                self._chunks.popleft()
                self._size -= len(first)
                self.dropped += len(first)
            else:
                self._chunks[0] = first[excess:]
                self._size -= excess
                self.dropped += excess

    def __len__(self) -> int:
        return self._size

    def peek(self) -> str:
        """The kept text, left in place."""
        if len(self._chunks) > 1:
            self._chunks = deque(["".join(self._chunks)])
        return self._chunks[0] if self._chunks else ""

    def take(self) -> tuple[str, int]:
        """The kept text and the count dropped before it; the buffer starts over empty."""
        text, dropped = self.peek(), self.dropped
        self._chunks.clear()
        self._size = 0
        self.dropped = 0
        return text, dropped


class HeadTailBuffer:
    """Keeps the first and the last characters of a stream, ``limit`` in all.

    The start of a command's output says what it did and the end how it ended;
    the middle is what goes when there is too much.
    """

    def __init__(self, limit: int) -> None:
        self._head_limit, tail_limit = self.split(limit)
        self._head: list[str] = []
        self._head_size = 0
        self._tail = TailBuffer(tail_limit)
        self.total = 0
        """Characters written in all."""

    @staticmethod
    def split(limit: int) -> tuple[int, int]:
        """How many of ``limit`` characters go to the head and how many to the tail."""
        return limit - limit // 2, limit // 2

    def write(self, text: str) -> None:
        """Append ``text``."""
        self.total += len(text)
        room = self._head_limit - self._head_size
        if room > 0:
            self._head.append(text[:room])
            self._head_size += min(room, len(text))
            text = text[room:]
        self._tail.write(text)

    @property
    def cut(self) -> int:
        """How many characters were left out of the middle."""
        return self._tail.dropped

    def text(self) -> str:
        """The kept output, a marker where the middle was cut."""
        head = "".join(self._head)
        if self.cut:
            return f"{head}{cut_marker(self.cut)}{self._tail.peek()}"
        return head + self._tail.peek()


class LineSplitter:
    """Cuts a stream of text into lines (without their ``\\n`` or ``\\r\\n``).

    A line longer than ``limit`` comes out in pieces of ``limit`` characters,
    so an endless line cannot eat memory.
    """

    def __init__(self, limit: int = 65_536) -> None:
        self._limit = limit
        self._pending = ""

    def feed(self, text: str) -> list[str]:
        """The lines completed by ``text``."""
        pieces = (self._pending + text).split("\n")
        self._pending = pieces.pop()
        lines: list[str] = []
        for piece in pieces:
            piece = piece.removesuffix("\r")
            while len(piece) > self._limit:
                lines.append(piece[: self._limit])
                piece = piece[self._limit :]
            lines.append(piece)
        while len(self._pending) > self._limit:
            lines.append(self._pending[: self._limit])
            self._pending = self._pending[self._limit :]
        return lines

    def skip(self, text: str) -> None:
        """Take ``text`` without cutting it into lines (nobody is listening).

        Only the unfinished last line is kept, so lines cut after a listener
        arrives start where they really start.
        """
        end = text.rfind("\n")
        self._pending = self._pending + text if end < 0 else text[end + 1 :]
        if len(self._pending) > self._limit:
            # What feed() would leave: the part after the last whole piece of `limit`.
            self._pending = self._pending[-(len(self._pending) % self._limit or self._limit) :]

    def flush(self) -> list[str]:
        """The last line, when the stream ended without a newline."""
        rest, self._pending = self._pending, ""
        return [rest.removesuffix("\r")] if rest else []
