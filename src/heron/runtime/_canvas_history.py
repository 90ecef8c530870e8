"""History over every node's transcript: search, grep, read and stats (``/v1/canvas/history``).

A node's transcript is its saved conversation (``heron_nodes.state``, an
``AgentState``: ``messages_full``, every message ever added, as saved at the end of
its last run), or, for a node that has not run yet, its prompt as the one user
message. The work is bounded: at most :data:`MAX_NODES` transcripts and
:data:`MAX_CHARS` characters of text per request (answers say ``truncated``), and
a grep's matching gets :data:`GREP_TIMEOUT` seconds in all (the ``regex`` engine
checks the time as it backtracks, so a runaway pattern stops).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import regex

from .. import api
from ._errors import ApiError
from ._store import Row

if TYPE_CHECKING:
    from ._engine import Engine

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


def transcript(row: Mapping[str, Any]) -> list[api.HistoryMessage]:
    """A node's transcript (``prompt`` and ``state`` of its row) as wire messages."""
    state = row.get("state")
    saved = state.get("messages_full") if isinstance(state, Mapping) else None
    if not saved:
        prompt = row.get("prompt")
        return [api.HistoryMessage(index=0, role="user", text=prompt)] if prompt else []
    return [_message(i, m) for i, m in enumerate(saved) if isinstance(m, Mapping)]


def _message(index: int, data: Mapping[str, Any]) -> api.HistoryMessage:
    calls = [
        api.HistoryToolCall(
            id=str(c.get("id", "")),
            name=str(c.get("name", "")),
            arguments=dict(c.get("arguments") or {}),
        )
        for c in data.get("tool_calls") or ()
        if isinstance(c, Mapping)
    ]
    role = data.get("role")
    call_id, tool = data.get("tool_call_id"), data.get("tool_name")
    return api.HistoryMessage(
        index=index,
        role=role if role in ("system", "user", "assistant", "tool") else "user",
        text=_text(data.get("content")),
        tool_calls=calls,
        tool_call_id=str(call_id) if call_id is not None else None,
        tool_name=str(tool) if tool is not None else None,
        is_error=bool(data.get("is_error")),
    )


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


def _searchable(message: api.HistoryMessage) -> str:
    """What search and grep look through: the text, and a call's tool name and arguments."""
    calls = [f"{c.name} {_arguments(c.arguments)}" for c in message.tool_calls]
    return "\n".join([message.text, *calls]) if calls else message.text


def _arguments(arguments: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in arguments.items())


@dataclass(kw_only=True, slots=True)
class _Scan:
    """The transcripts a request reads, within its limits."""

    nodes: int = 0
    chars: int = 0
    truncated: bool = False


class History:
    """Reads nodes' transcripts (``engine.canvas.history``)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def _rows(
        self,
        scan: _Scan,
        *,
        node_ids: Collection[str] | None,
        profile: str | None = None,
        since: float | None = None,
    ) -> list[Row]:
        """The rows of the transcripts to read, within the limits (``scan`` says so)."""
        ids, more = await self.engine.store.transcript_ids(
            node_ids=node_ids, profile=profile, since=since, limit=MAX_NODES
        )
        scan.truncated = more
        rows: list[Row] = []
        for start in range(0, len(ids), BATCH):
            for row in await self.engine.store.transcripts(ids[start : start + BATCH]):
                if scan.chars >= MAX_CHARS:
                    scan.truncated = True
                    return rows
                messages = transcript(row)
                scan.chars += sum(len(m.text) for m in messages)
                scan.nodes += 1
                rows.append({**row, "messages": messages})
        return rows

    async def read(self, node_id: str, offset: int, limit: int) -> api.HistoryPage:
        """A page of the node's transcript (``404`` if there is no such node)."""
        await self.engine.row(node_id)
        (row,) = await self.engine.store.transcripts([node_id])
        messages = transcript(row)
        page = messages[offset : offset + limit]
        end = offset + len(page)
        return api.HistoryPage(
            node_id=node_id,
            total=len(messages),
            messages=page,
            next_offset=end if end < len(messages) else None,
        )

    async def search(self, request: api.HistorySearchRequest) -> api.HistorySearchResult:
        """Messages holding the query's words, ranked (see :func:`_rank`)."""
        terms = list(dict.fromkeys(w.lower() for w in _WORD.findall(request.query)))
        if not terms:
            raise ApiError(
                422, "invalid_query", f"the query {request.query!r} holds no word to search for"
            )
        scan = _Scan()
        rows = await self._rows(scan, node_ids=request.node_ids, profile=request.profile)
        hits = await asyncio.to_thread(_rank, rows, terms, request.query)
        return api.HistorySearchResult(
            hits=hits[: request.limit],
            nodes_scanned=scan.nodes,
            truncated=scan.truncated or len(hits) > request.limit,
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
        scan = _Scan()
        rows = await self._rows(scan, node_ids=request.node_ids, profile=request.profile)
        matches, stopped, timed_out = await asyncio.to_thread(
            _grep, rows, pattern, request.context, request.limit
        )
        return api.HistoryGrepResult(
            matches=matches,
            nodes_scanned=scan.nodes,
            truncated=scan.truncated or stopped,
            timed_out=timed_out,
        )

    async def stats(self, request: api.HistoryStatsRequest) -> api.HistoryStats:
        """Messages by role, tool calls by tool, turns and tokens of the nodes chosen."""
        since = request.since.timestamp() if request.since is not None else None
        scan = _Scan()
        rows = await self._rows(scan, node_ids=request.node_ids, since=since)
        roles: Counter[str] = Counter()
        tools: Counter[str] = Counter()
        errors = 0
        for row in rows:
            for message in row["messages"]:
                roles[message.role] += 1
                tools.update(c.name for c in message.tool_calls)
                errors += message.is_error
        return api.HistoryStats(
            nodes=len(rows),
            messages=sum(roles.values()),
            messages_by_role=dict(sorted(roles.items())),
            tool_calls=sum(tools.values()),
            tool_calls_by_tool=dict(tools.most_common()),
            tool_errors=errors,
            turns=sum(r["turns"] for r in rows),
            input_tokens=sum(r["input_tokens"] for r in rows),
            output_tokens=sum(r["output_tokens"] for r in rows),
            truncated=scan.truncated,
        )


def _messages(rows: list[Row]) -> Iterator[tuple[str, api.HistoryMessage, str]]:
    for row in rows:
        for message in row["messages"]:
            yield row["node_id"], message, _searchable(message)


def _rank(rows: list[Row], terms: list[str], query: str) -> list[api.HistorySearchHit]:
    """Score each message holding a term: per term ``(1 + log tf) * idf`` summed, scaled
    by the share of the terms it holds, doubled when it holds the whole phrase."""
    phrase = " ".join(query.lower().split())
    found: list[tuple[str, api.HistoryMessage, str, Counter[str]]] = []
    seen: Counter[str] = Counter()  # messages holding each term
    total = 0
    for node_id, message, text in _messages(rows):
        total += 1
        words = Counter(w for w in _WORD.findall(text.lower()) if w in terms)
        if words:
            seen.update(words.keys())
            found.append((node_id, message, text, words))
    hits = []
    for node_id, message, text, words in found:
        score = sum((1 + math.log(n)) * math.log(1 + total / seen[w]) for w, n in words.items())
        score *= len(words) / len(terms)
        lowered = " ".join(text.lower().split())
        if len(terms) > 1 and phrase in lowered:
            score *= 2
        hits.append(
            api.HistorySearchHit(
                node_id=node_id,
                index=message.index,
                role=message.role,
                snippet=_snippet(text, phrase if phrase in lowered else next(iter(words))),
                score=round(score, 4),
            )
        )
    hits.sort(key=lambda h: -h.score)
    return hits


def _snippet(text: str, needle: str) -> str:
    flat = " ".join(text.split())
    at = flat.lower().find(needle)
    at = max(at, 0)
    start = max(0, at - SNIPPET // 3)
    end = min(len(flat), start + SNIPPET)
    return ("…" if start > 0 else "") + flat[start:end] + ("…" if end < len(flat) else "")


def _grep(
    rows: list[Row], pattern: regex.Pattern[str], context: int, limit: int
) -> tuple[list[api.HistoryGrepMatch], bool, bool]:
    """Matching lines, whether the search stopped early, and whether it timed out."""
    deadline = time.monotonic() + GREP_TIMEOUT
    matches: list[api.HistoryGrepMatch] = []
    for node_id, message, text in _messages(rows):
        lines = text.splitlines()
        for number, line in enumerate(lines):
            left = deadline - time.monotonic()
            try:
                if left <= 0 or pattern.search(line, timeout=left) is None:
                    if left <= 0:
                        return matches, True, True
                    continue
            except TimeoutError:
                return matches, True, True
            if len(matches) == limit:
                return matches, True, False
            matches.append(
                api.HistoryGrepMatch(
                    node_id=node_id,
                    index=message.index,
                    role=message.role,
                    line=number + 1,
                    text=line,
                    before=lines[max(0, number - context) : number],
                    after=lines[number + 1 : number + 1 + context],
                )
            )
    return matches, False, False
