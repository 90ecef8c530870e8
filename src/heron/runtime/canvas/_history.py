"""History over every node's transcript: search, grep, read and stats (``/v1/canvas/history``),
bounded and kept off the event loop (ARCHITECTURE.md, canvas)."""

from __future__ import annotations

import asyncio
import heapq
import json
import math
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

from ... import api
from ..db import Row
from ..nodes import Kernel
from ..server import ApiError
from ._store import CanvasStore

__all__ = ["GREP_TIMEOUT", "MAX_CHARS", "MAX_NODES", "History", "transcript"]

MAX_NODES = 2000
"""The most transcripts one history request reads (most recently active first)."""

MAX_CHARS = 32 * 1024 * 1024
"""The most characters of message text one history request reads."""

GREP_TIMEOUT = 2.0
"""Seconds a grep's matching may take in all."""

BATCH = 50
"""Transcripts loaded from the database at a time."""

SNIPPET = 160
"""About how many characters a search hit's snippet shows."""

_WORD = regex.compile(r"\w+")

_PLAIN = regex.compile(r"[A-Za-z0-9_-]+")
"""A grep pattern that is a plain word: it matches only itself, so the database can
pre-filter on it."""

Raw = Mapping[str, Any]
"""A message as ``Message.to_dict()`` saved it."""


@dataclass(frozen=True, slots=True)
class _Transcript:
    """One node's messages as read: ``(index, message)``."""

    row: Row
    messages: list[tuple[int, Raw]]


def saved_messages(row: Mapping[str, Any]) -> list[tuple[int, Raw]]:
    """A node's saved messages with their indexes (its prompt if it never ran)."""
    state = row.get("state")
    saved = state.get("messages_full") if isinstance(state, Mapping) else None
    if not saved:
        prompt = row.get("prompt")
        return [(0, {"role": "user", "content": prompt})] if prompt else []
    return [(i, m) for i, m in enumerate(saved) if isinstance(m, Mapping)]


def transcript(row: Mapping[str, Any]) -> list[api.HistoryMessage]:
    """A node's saved transcript (``prompt`` and ``state`` of its row) as wire messages."""
    return [_message(i, m) for i, m in saved_messages(row)]


def _message(index: int, data: Raw) -> api.HistoryMessage:
    calls = [
        api.HistoryToolCall(
            id=str(c.get("id", "")),
            name=str(c.get("name", "")),
            arguments=dict(c.get("arguments") or {}),
        )
        for c in _calls(data)
    ]
    call_id, tool = data.get("tool_call_id"), data.get("tool_name")
    return api.HistoryMessage(
        index=index,
        role=_role(data),
        text=_text(data.get("content")),
        tool_calls=calls,
        tool_call_id=str(call_id) if call_id is not None else None,
        tool_name=str(tool) if tool is not None else None,
        is_error=bool(data.get("is_error")),
    )


def _role(data: Raw) -> Any:
    role = data.get("role")
    return role if role in ("system", "user", "assistant", "tool") else "user"


def _calls(data: Raw) -> list[Raw]:
    return [c for c in data.get("tool_calls") or () if isinstance(c, Mapping)]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, Mapping) and part.get("type") == "image":
                parts.append("[image]")
        return "\n".join(parts)
    return ""


def _searchable(data: Raw) -> str:
    """What search and grep look through: the text, and a call's tool name and arguments
    (values other than text as JSON, as they are saved: the database pre-filter sees
    the same words)."""
    text = _text(data.get("content"))
    calls = [f"{c.get('name', '')} {_arguments(c.get('arguments'))}" for c in _calls(data)]
    return "\n".join([text, *calls]) if calls else text


def _size(data: Raw) -> int:
    """About how many characters of text a message holds (what the limits count)."""
    content = data.get("content")
    return len(content) if isinstance(content, str) else len(_text(content))


def _arguments(arguments: Any) -> str:
    if not isinstance(arguments, Mapping):
        return ""
    return " ".join(
        f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
        for k, v in arguments.items()
    )


@dataclass(kw_only=True, slots=True)
class _Scan:
    """The transcripts a request reads, within its limits."""

    nodes: int = 0
    chars: int = 0
    truncated: bool = False
    in_scope: int = 0
    """Nodes the request's filters take in all (a search's word rarity is over these)."""


def _read(rows: list[Row], live: Mapping[str, list[Raw]], scan: _Scan) -> list[_Transcript]:
    """The batch's transcripts with their searchable text, within ``scan``'s limits."""
    found = []
    for row in rows:
        if scan.chars >= MAX_CHARS:
            scan.truncated = True
            break
        now = live.get(row["node_id"])
        messages = list(enumerate(now)) if now is not None else saved_messages(row)
        scan.chars += sum(_size(m) for _, m in messages)
        scan.nodes += 1
        found.append(_Transcript(row=row, messages=messages))
    return found


Consume = Callable[[_Transcript], bool | None]
"""Takes one transcript in a worker thread; ``False``: no more wanted."""


class History:
    """Reads nodes' transcripts (``Canvas.history``)."""

    def __init__(self, engine: Kernel, store: CanvasStore) -> None:
        self.engine = engine
        self.store = store
        """The canvas's store, which reads the transcripts."""

    def _live(self, only: str | None = None) -> dict[str, list[Raw]]:
        """The conversations of the runs in progress here (or of node ``only``), as they
        are now (they are saved only when a run ends)."""
        live: dict[str, list[Raw]] = {}
        for node_id, active in self.engine.active.items():
            if only is not None and node_id != only:
                continue
            agent = active.agent
            if agent is not None:
                live[node_id] = [m.to_dict() for m in agent.messages_full]
        return live

    async def _each(
        self,
        scan: _Scan,
        consume: Consume,
        *,
        node_ids: Collection[str] | None,
        profile: str | None = None,
        since: float | None = None,
        containing: Sequence[str] | None = None,
    ) -> None:
        """Feed ``consume`` (in a worker thread) the transcripts, a batch at a time,
        until it returns ``False`` or the limits are reached."""
        live = self._live()
        ids, more, scan.in_scope = await self.store.transcript_ids(
            node_ids=node_ids,
            profile=profile,
            since=since,
            limit=MAX_NODES,
            containing=containing,
            always=live.keys(),
        )
        scan.truncated = more
        for start in range(0, len(ids), BATCH):
            rows = await self.store.transcripts(ids[start : start + BATCH])
            if not await asyncio.to_thread(_feed, consume, rows, live, scan):
                return
            if scan.chars >= MAX_CHARS:
                scan.truncated = scan.truncated or start + BATCH < len(ids)
                return

    async def read(self, node_id: str, offset: int, limit: int) -> api.HistoryPage:
        """A page of the node's transcript (``404`` if there is no such node)."""
        await self.engine.row(node_id)
        events = self.engine.events
        live = self._live(node_id).get(node_id)
        # Read with the running node's messages (in the same step of the loop) or before
        # the saved ones, so that no event whose effect they miss is before it.
        mark = events.shown_before(node_id)
        if mark is None:
            mark = await events.logged_last(node_id)
        if live is not None:
            indexed: list[tuple[int, Raw]] = list(enumerate(live))
        else:
            rows = await self.store.transcripts([node_id])
            if not rows:  # pruned since the check above
                raise ApiError(404, "node_not_found", f"no node {node_id!r}")
            indexed = saved_messages(rows[0])
        page = [_message(i, m) for i, m in indexed[offset : offset + limit]]
        end = offset + len(page)
        return api.HistoryPage(
            node_id=node_id,
            total=len(indexed),
            messages=page,
            next_offset=end if end < len(indexed) else None,
            event_sequence=mark,
        )

    async def search(self, request: api.HistorySearchRequest) -> api.HistorySearchResult:
        """Messages holding the query's words, ranked (see :class:`_Ranking`)."""
        terms = list(dict.fromkeys(w.lower() for w in _WORD.findall(request.query)))
        if not terms:
            raise ApiError(
                422, "invalid_query", f"the query {request.query!r} holds no word to search for"
            )
        scan = _Scan()
        ranking = _Ranking(terms, request.query)
        # Only ASCII words pre-filter: the saved JSON escapes other characters.
        ascii_only = all(t.isascii() for t in terms)
        await self._each(
            scan,
            ranking.add,
            node_ids=request.node_ids,
            profile=request.profile,
            containing=terms if ascii_only else None,
        )
        hits, more = ranking.best(request.limit, scan.in_scope)
        return api.HistorySearchResult(
            hits=hits, nodes_scanned=scan.nodes, truncated=scan.truncated or more
        )

    async def grep(self, request: api.HistoryGrepRequest) -> api.HistoryGrepResult:
        """Lines matching the pattern (``422 invalid_pattern`` if it is not one)."""
        flags = regex.IGNORECASE if request.ignore_case else 0
        try:
            pattern = regex.compile(request.pattern, flags)
        except regex.error as exc:
            raise ApiError(
                422,
                "invalid_pattern",
                f"pattern {request.pattern!r} is not a valid regular expression: {exc}",
            ) from None
        plain = _PLAIN.fullmatch(request.pattern) is not None and not (
            # Ignoring case, k and s also match the Kelvin sign and the long s, which
            # the saved JSON escapes.
            request.ignore_case and {"k", "s"} & set(request.pattern.lower())
        )
        scan = _Scan()
        grep = _Grep(pattern, request.context, request.limit)
        await self._each(
            scan,
            grep.add,
            node_ids=request.node_ids,
            profile=request.profile,
            containing=[request.pattern] if plain else None,
        )
        return api.HistoryGrepResult(
            matches=grep.matches,
            nodes_scanned=scan.nodes,
            truncated=scan.truncated or grep.stopped,
            timed_out=grep.timed_out,
        )

    async def stats(self, request: api.HistoryStatsRequest) -> api.HistoryStats:
        """Messages by role, tool calls by tool, turns and tokens of the nodes chosen."""
        since = request.since.timestamp() if request.since is not None else None
        scan = _Scan()
        count = _Count()
        await self._each(
            scan, count.add, node_ids=request.node_ids, profile=request.profile, since=since
        )
        return api.HistoryStats(
            nodes=scan.nodes,
            messages=sum(count.roles.values()),
            messages_by_role=dict(sorted(count.roles.items())),
            tool_calls=sum(count.tools.values()),
            tool_calls_by_tool=dict(count.tools.most_common()),
            tool_errors=count.errors,
            turns=count.turns,
            input_tokens=count.input_tokens,
            output_tokens=count.output_tokens,
            truncated=scan.truncated,
        )


def _feed(consume: Consume, rows: list[Row], live: Mapping[str, list[Raw]], scan: _Scan) -> bool:
    """Read a batch and hand it on; ``False`` once ``consume`` wants no more."""
    return all(consume(each) is not False for each in _read(rows, live, scan))


class _Ranking:
    """Scores each message holding a term: per term ``(1 + log tf) * idf`` summed, where
    ``idf = log(1 + nodes / nodes holding the term)``, scaled by the share of the terms it
    holds, doubled when it holds the whole phrase."""

    def __init__(self, terms: list[str], query: str) -> None:
        self.terms = terms
        self.phrase = " ".join(query.lower().split())
        # The phrase with any whitespace between its words (as the text may have it).
        words = (regex.escape(w) for w in self.phrase.split(" "))
        self.whole = regex.compile(r"\s+".join(words)) if len(terms) > 1 else None
        alternatives = "|".join(regex.escape(t) for t in sorted(terms, key=len, reverse=True))
        self.pattern = regex.compile(rf"(?<!\w)(?:{alternatives})(?!\w)")
        self.found: list[tuple[str, int, Raw, str, Counter[str], bool]] = []
        self.holding: Counter[str] = Counter()  # transcripts holding each term

    def add(self, each: _Transcript) -> None:
        held: set[str] = set()
        for index, message in each.messages:
            text = _searchable(message)
            lowered = text.lower()
            if not any(t in lowered for t in self.terms):
                continue  # a cheap no before counting words
            words = Counter(self.pattern.findall(lowered))
            if words:
                held.update(words)
                whole = self.whole is not None and self.whole.search(lowered) is not None
                self.found.append((each.row["node_id"], index, message, text, words, whole))
        self.holding.update(held)

    def best(self, limit: int, nodes: int) -> tuple[list[api.HistorySearchHit], bool]:
        """The ``limit`` best hits, and whether there were more."""
        nodes = max(nodes, 1)
        idf = {w: math.log(1 + nodes / n) for w, n in self.holding.items()}
        scored = []
        for order, (node_id, index, message, text, words, whole) in enumerate(self.found):
            score = sum((1 + math.log(n)) * idf[w] for w, n in words.items())
            score *= len(words) / len(self.terms)
            if whole:
                score *= 2
            scored.append((round(score, 4), -order, node_id, index, message, text, words, whole))
        top = heapq.nlargest(limit, scored)
        hits = []
        for score, _, node_id, index, message, text, words, whole in top:
            needle = self.phrase if whole else next(iter(words))
            hits.append(
                api.HistorySearchHit(
                    node_id=node_id,
                    index=index,
                    role=_role(message),
                    snippet=_snippet(text, needle),
                    score=score,
                )
            )
        return hits, len(scored) > limit


def _snippet(text: str, needle: str) -> str:
    flat = " ".join(text.split())
    at = flat.lower().find(needle)
    at = max(at, 0)
    start = max(0, at - SNIPPET // 3)
    end = min(len(flat), start + SNIPPET)
    return ("…" if start > 0 else "") + flat[start:end] + ("…" if end < len(flat) else "")


@dataclass(slots=True)
class _Grep:
    """Matching lines in transcript order, within the limit and the time."""

    pattern: regex.Pattern[str]
    context: int
    limit: int
    left: float = GREP_TIMEOUT
    """Matching time left (reading transcripts does not count)."""
    matches: list[api.HistoryGrepMatch] = field(default_factory=list)
    stopped: bool = False
    """Whether the grep stopped early (the limit or the time)."""
    timed_out: bool = False

    def add(self, each: _Transcript) -> bool:
        """Grep one transcript; ``False`` once no more is wanted."""
        deadline = time.monotonic() + self.left
        try:
            return self._lines(each, deadline)
        finally:
            self.left = deadline - time.monotonic()

    def _lines(self, each: _Transcript, deadline: float) -> bool:
        for index, message in each.messages:
            lines = _searchable(message).splitlines()
            for number, line in enumerate(lines):
                left = deadline - time.monotonic()
                try:
                    if left <= 0:
                        raise TimeoutError
                    if self.pattern.search(line, timeout=left) is None:
                        continue
                except TimeoutError:
                    self.stopped = self.timed_out = True
                    return False
                if len(self.matches) == self.limit:
                    self.stopped = True
                    return False
                self.matches.append(
                    api.HistoryGrepMatch(
                        node_id=each.row["node_id"],
                        index=index,
                        role=_role(message),
                        line=number + 1,
                        text=line,
                        before=lines[max(0, number - self.context) : number],
                        after=lines[number + 1 : number + 1 + self.context],
                    )
                )
        return True


@dataclass(slots=True)
class _Count:
    """What :meth:`History.stats` adds up."""

    roles: Counter[str] = field(default_factory=Counter)
    tools: Counter[str] = field(default_factory=Counter)
    errors: int = 0
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, each: _Transcript) -> None:
        row = each.row
        self.turns += row["turns"]
        self.input_tokens += row["input_tokens"]
        self.output_tokens += row["output_tokens"]
        for _, message in each.messages:
            self.roles[_role(message)] += 1
            self.tools.update(str(c.get("name", "")) for c in _calls(message))
            self.errors += bool(message.get("is_error"))
