"""Answer text rendered as Markdown on a terminal, block by block as it streams.

Models answer in Markdown. On a terminal each finished block (a paragraph, a list,
a fenced code block) is printed rendered; the block still being written shows as
plain text in a transient region below, redrawn as it grows. Anywhere else (a
pipe, a file) the text is written exactly as it came, Markdown and all.
"""

from __future__ import annotations

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.text import Text

__all__ = ["MarkdownStream", "markdown_or_text"]


def _split(text: str) -> int:
    """Where the finished blocks of ``text`` end: after its last blank line that is not
    inside a fenced code block (0: no block is finished yet)."""
    end = 0
    fenced = False
    position = 0
    lines = text.split("\n")
    for index, line in enumerate(lines[:-1]):  # the last piece has no line break yet
        position += len(line) + 1
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and not line.strip() and index > 0:
            end = position
    return end


def markdown_or_text(console: Console, text: str) -> Markdown | Text:
    """``text`` rendered as Markdown on a terminal, as plain text elsewhere."""
    return Markdown(text) if console.is_terminal else Text(text)


class MarkdownStream:
    """Feeds streamed text to ``console`` (see the module docstring)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._pending = ""
        self._live: Live | None = None

    @property
    def rendering(self) -> bool:
        """Whether text is rendered (a terminal) rather than written as it comes."""
        return self.console.is_terminal

    def feed(self, text: str) -> None:
        """Take the next piece of text (only on a terminal: see :attr:`rendering`)."""
        self._pending += text
        cut = _split(self._pending)
        if cut:
            done, self._pending = self._pending[:cut], self._pending[cut:]
            self._hide()
            self.console.print(Markdown(done.strip("\n")))
        if self._pending:
            shown = Text(self._tail())
            if self._live is None:
                self._live = Live(
                    shown,
                    console=self.console,
                    transient=True,
                    auto_refresh=False,
                    vertical_overflow="crop",
                )
                self._live.start()
            self._live.update(shown, refresh=True)

    def _tail(self) -> str:
        """The end of the block being written, as much as fits the terminal's height (a
        long paragraph shows its newest words, not its first screenful)."""
        room = max(1, self.console.height - 2) * max(1, self.console.width)
        return self._pending if len(self._pending) <= room else "…" + self._pending[-room + 1 :]

    def end(self) -> None:
        """The text is complete: print what is left of it, rendered."""
        self._hide()
        rest, self._pending = self._pending.strip("\n"), ""
        if rest:
            self.console.print(Markdown(rest))

    def _hide(self) -> None:
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()
