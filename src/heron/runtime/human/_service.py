"""Human requests: the questions a node (or an application) puts to a person, and the inbox."""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from ... import api
from ..._core import TextPart
from ...tools import Tool, ToolContext, ToolResult
from ...tools.question_answer import QuestionAnswerTool, question_answer_tool
from .. import canvas
from ..canvas import asking_from
from ..nodes import SETTLED, Feature, Kernel, Outcome, RunTools, call_key
from ..profiles import DEFAULT_PROFILE, check_profile_name
from ..server import ApiError
from ._routes import add_human_routes
from ._store import (
    RESOLVED,
    Change,
    HumanStore,
    NodeSettled,
    NotOpen,
    RequestRow,
    StoredQuestion,
    changed,
)
from ._tables import HUMAN_SCHEMA
from ._text import (
    answered_text,
    check_answers,
    check_questions,
    dismissed_text,
    first_line,
    to_request,
    to_ticket,
    withdrawn_text,
)

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["AskQuestionsTool", "Human", "check_request_id"]

log = logging.getLogger("heron.runtime")

FILED = "node.human_request.filed"
"""The event a node gets when a request for it is filed."""
RESOLVED_EVENT = "node.human_request.resolved"
"""The event a node gets when its request is answered, dismissed or cancelled."""


def check_request_id(value: str) -> str:
    """``value`` if it is a well-formed request (ticket) id, else ``400 invalid_request_id``."""
    if not api.is_valid_id(value):
        raise ApiError(400, "invalid_request_id", f"not a valid request id: {value!r}")
    return value


class Human(Feature):
    """Files, lists and resolves human requests."""

    schema = HUMAN_SCHEMA

    def __init__(self, engine: Kernel) -> None:
        self.engine = engine
        self.store = HumanStore(engine.db)
        """The requests' rows."""
        # The canvas's `asking` attention items are the open human requests.
        engine.features.get(canvas.Canvas).attention_sources.append(asking_from(self.open_requests))

    def routes(self, app: FastAPI) -> None:
        """Serve the human request and inbox routes."""
        add_human_routes(app, self)

    def tools(self, run: RunTools) -> list[Tool]:
        """The question tool (``ask-questions``): it files a request."""
        return [self.tool(run.node_id, run.run)]

    async def start(self) -> None:
        """After the orchestration's: answers a dying daemon queued but did not deliver."""
        await self.resume()

    async def settled(self, node_id: str, outcome: Outcome) -> None:
        """The node's open requests are cancelled (see :meth:`_node_settled`)."""
        await self._node_settled(node_id, outcome)

    # -- filing ------------------------------------------------------------------

    async def create(self, request: api.HumanRequestCreate) -> api.HumanRequest:
        """File a request (for a live node, or for nobody): ``POST /v1/human/requests``."""
        questions = check_questions(request.questions)
        if not questions and not (request.body or "").strip():
            raise ApiError(422, "invalid_questions", "a request needs questions or a body")
        profile = check_profile_name(request.profile) if request.profile is not None else None
        node_id = None
        if request.node_id is not None:
            node = await self.engine.row(request.node_id)
            if node["status"] in SETTLED:
                raise ApiError(
                    409,
                    "node_settled",
                    f"node {node['node_id']!r} is {node['status']}: nobody waits for an answer",
                )
            node_id = node["node_id"]
            own = node["profile"] or DEFAULT_PROFILE
            if profile is not None and profile != own:
                raise ApiError(
                    422,
                    "profile_mismatch",
                    f"a request for node {node_id!r} belongs to its profile {own!r}, "
                    f"not {profile!r}: leave profile out",
                )
            profile = own
        return await self._file(
            node_id, profile or DEFAULT_PROFILE, request.title, request.body, questions
        )

    async def file_for_node(
        self, node_id: str, title: str, questions: list[StoredQuestion], key: str
    ) -> api.HumanRequest:
        """File the request a node's ``ask-questions`` call ``key`` makes (once per call)."""
        node = await self.engine.row(node_id)
        profile = node["profile"] or DEFAULT_PROFILE
        stored: list[StoredQuestion] = [
            {**q, "free_text": True} for q in questions
        ]  # the tool's are suggestions
        return await self._file(node_id, profile, title, None, stored, key)

    async def _file(
        self,
        node_id: str | None,
        profile: str,
        title: str,
        body: str | None,
        questions: list[StoredQuestion],
        key: str | None = None,
    ) -> api.HumanRequest:
        now = time.time()
        row: RequestRow = {
            "request_id": f"hr_{secrets.token_hex(8)}",
            "node_id": node_id,
            "profile": profile,
            "status": "open",
            "title": _title(title),
            "questions": questions,
            "body": body,
            "response": None,
            "progress": [],
            "reason": None,
            "revision": 1,
            "call_key": key,
            "created_at": now,
            "updated_at": now,
            "resolved_at": None,
        }
        try:
            stored = await self.store.add_request(row)
        except NodeSettled as exc:
            raise ApiError(
                409,
                "node_settled",
                f"node {node_id!r} is {exc.status or 'gone'}: nobody waits for an answer",
            ) from None
        request = to_request(stored)
        if stored["request_id"] == row["request_id"]:  # (not a call run again)
            await self._publish(request, FILED)
        return request

    # -- reading -----------------------------------------------------------------

    async def _row(self, request_id: str) -> RequestRow:
        row = await self.store.human_request(check_request_id(request_id))
        if row is None:
            raise ApiError(404, "request_not_found", f"no human request {request_id!r}")
        return row

    async def get(self, request_id: str) -> api.HumanRequest:
        """One request, whatever its status."""
        return to_request(await self._row(request_id))

    async def open_requests(
        self, node_ids: Collection[str] | None = None
    ) -> list[api.HumanRequest]:
        """The open requests (of those nodes, when given), newest first."""
        await self._sweep()
        rows = await self.store.human_requests(statuses=["open"], node_ids=node_ids)
        return [to_request(r) for r in rows]

    async def inbox(
        self,
        *,
        resolved: bool = False,
        profile: str | None = None,
        node_id: str | None = None,
        limit: int,
    ) -> list[api.InboxTicket]:
        """Open tickets newest first (``resolved``: the resolved ones, last resolved first)."""
        if profile is not None:
            check_profile_name(profile)
        if node_id is not None and not api.is_valid_id(node_id):
            raise ApiError(400, "invalid_node_id", f"not a valid node id: {node_id!r}")
        await self._sweep()
        rows = await self.store.human_requests(
            statuses=RESOLVED if resolved else ["open"],
            node_ids=[node_id] if node_id is not None else None,
            profile=profile,
            limit=limit,
            order="resolved_at" if resolved else "created_at",
        )
        # The nodes in one query, not one per ticket (a listing may hold 1000).
        found = await self.engine.store.nodes_by_id({r["node_id"] for r in rows if r["node_id"]})
        return [to_ticket(r, found.get(r["node_id"] or "")) for r in rows]

    async def ticket(self, request_id: str) -> api.InboxTicket:
        """One ticket (a request with its node's context)."""
        return await self._ticket(await self._row(request_id))

    async def _ticket(self, row: RequestRow) -> api.InboxTicket:
        node = await self.engine.store.node(row["node_id"]) if row["node_id"] else None
        return to_ticket(row, node)

    async def response(self, request_id: str) -> api.HumanResponse:
        """The person's response; ``409 no_response`` until the request is answered."""
        request = await self.get(request_id)
        if request.response is None:
            raise ApiError(
                409,
                "no_response",
                f"request {request_id!r} is {request.status}: it has no response",
            )
        return request.response

    # -- changes -----------------------------------------------------------------

    async def replace(self, request_id: str, replace: api.HumanRequestReplace) -> api.HumanRequest:
        """Replace an open request's title, body and questions (its revision goes up)."""
        await self._row(request_id)
        questions = check_questions(replace.questions)
        if not questions and not (replace.body or "").strip():
            raise ApiError(422, "invalid_questions", "a request needs questions or a body")

        def change(row: RequestRow) -> tuple[dict[str, Any], str | None]:
            _check_revision(row, replace.revision)
            title = _title(replace.title)
            return {"title": title, "body": replace.body, "questions": questions}, None

        row = await self._change(request_id, change, bump=True)
        return to_request(row)

    async def respond(self, request_id: str, respond: api.HumanRespondRequest) -> api.HumanRequest:
        """Answer an open request; its node (if any) is woken with the answers."""
        await self._check_node_waits(await self._row(request_id))

        def change(row: RequestRow) -> tuple[dict[str, Any], str | None]:
            # Checked against the questions as they are in this transaction (a replace
            # may have landed since they were read).
            _check_revision(row, respond.revision)
            answers, text = check_answers(row["questions"], respond)
            response = {
                "answers": answers,
                "text": text,
                "responded_by": respond.responded_by,
                "responded_at": time.time(),
            }
            values = {"status": "answered", "response": response}
            return values, answered_text(changed(row, values))

        return await self._resolve(request_id, change)

    async def dismiss(self, request_id: str, reason: str | None) -> api.HumanRequest:
        """The person will not answer: the request is ``dismissed`` and its node told why."""
        await self._check_node_waits(await self._row(request_id))
        values = {"status": "dismissed", "reason": _reason(reason)}
        return await self._resolve(
            request_id, lambda row: (values, dismissed_text(changed(row, values)))
        )

    async def cancel(self, request_id: str, reason: str | None) -> api.HumanRequest:
        """Withdraw the request: ``cancelled``; a node waiting on it is told, and woken."""
        await self._check_node_waits(await self._row(request_id))
        values = {"status": "cancelled", "reason": _reason(reason)}
        return await self._resolve(
            request_id, lambda row: (values, withdrawn_text(changed(row, values)))
        )

    async def progress(self, request_id: str, note: api.HumanProgressRequest) -> api.InboxTicket:
        """Keep a person's progress note on an open ticket (shown with it)."""
        await self._row(request_id)
        text = note.note.strip()
        if not text:
            raise ApiError(422, "invalid_request", "a progress note cannot be blank")
        entry = {"note": text, "percent": note.percent, "by": note.by, "at": time.time()}
        row = await self._change(request_id, lambda _: ({"progress": ("add", entry)}, None))
        return await self._ticket(row)

    async def _resolve(self, request_id: str, change: Change) -> api.HumanRequest:
        """Resolve the request with ``change``, then wake its node to read the message."""
        row = await self._change(request_id, change)
        request = to_request(row)
        await self._publish(request, RESOLVED_EVENT)
        if row["node_id"] is not None:
            await self._wake(row["node_id"])
        return request

    async def _change(self, request_id: str, change: Change, *, bump: bool = False) -> RequestRow:
        """Change an open request (``409 request_not_open`` otherwise)."""

        def bumped(row: RequestRow) -> tuple[dict[str, Any], str | None]:
            values, message = change(row)
            return ({**values, "revision": "bump"} if bump else values), message

        try:
            return await self.store.change_request(request_id, bumped)
        except KeyError:
            raise ApiError(404, "request_not_found", f"no human request {request_id!r}") from None
        except NotOpen as exc:
            status = exc.row["status"]
            raise ApiError(
                409,
                "request_not_open",
                f"request {request_id!r} is {status}: it can no longer change",
                {"status": status},
            ) from None

    async def _check_node_waits(self, row: RequestRow) -> None:
        """A request whose node has settled is cancelled now (``409 request_not_open``):
        nobody waits for the answer (a settlement the settle hook did not see, such
        as a resident root closed without a new outcome)."""
        if row["node_id"] is None or row["status"] != "open":
            return
        node = await self.engine.store.node(row["node_id"])
        if node is None or node["status"] in SETTLED:
            why = "its node has settled" if node is not None else "its node is gone"
            await self._cancel_quietly(row["request_id"], why)

    async def _cancel_quietly(self, request_id: str, why: str) -> None:
        """Cancel an open request whose node no longer waits (nothing is sent to it)."""
        values = {"status": "cancelled", "reason": why}
        try:
            row = await self.store.change_request(request_id, lambda _: (values, None))
        except (KeyError, NotOpen):
            return  # resolved meanwhile
        await self._publish(to_request(row), RESOLVED_EVENT)

    async def _wake(self, node_id: str) -> None:
        """Wake the node to read the message just queued, unless it is running (it reads
        it next turn) or settled (nobody listens)."""
        engine = self.engine
        async with engine.locked(node_id):
            row = await engine.store.node(node_id)
            if row is None or row["status"] in SETTLED or row["status"] == "running":
                return
            try:
                for feature in engine.features:  # relaunching; a removed worktree
                    feature.check_message(row)
            except ApiError as exc:
                # The answer stays queued: the node reads it when it next runs.
                log.warning("request answered, but node %s cannot wake: %s", node_id, exc.message)
                return
            await engine.start_next_run(node_id)

    async def _node_settled(self, node_id: str, outcome: Outcome) -> None:
        """Settle hook: the node's open requests are cancelled (nobody waits for them).

        Not a resident root's: it records an outcome at each answer and lives on, dormant,
        for the next message (an application may well have asked a person on its behalf).
        """
        node = await self.engine.store.node(node_id)
        if node is not None and node["status"] not in SETTLED:
            return
        for request in await self.open_requests([node_id]):
            await self._cancel_quietly(request.request_id, "its node settled")

    async def _sweep(self) -> None:
        """Cancel the open requests whose node has settled without the settle hook
        seeing it (a resident root closed with no new outcome; a daemon killed between
        a settlement and its hook), so no inbox lists a question nobody waits for."""
        for request_id in await self.store.orphaned_requests():
            await self._cancel_quietly(request_id, "its node settled")

    async def resume(self) -> None:
        """At start: cancel requests orphaned while the daemon was down, and wake the
        nodes a response reached just before it died."""
        await self._sweep()
        for node_id in await self.store.requests_to_wake():
            try:
                await self._wake(node_id)
            except Exception:
                log.exception("waking node %s with its answer failed", node_id)

    async def _publish(self, request: api.HumanRequest, kind: str) -> None:
        """Tell the request's node's stream (a request for nobody has none)."""
        if request.node_id is None:
            return
        await self.engine.events.prime(request.node_id)
        self.engine.events.publish(
            request.node_id, kind, {"request": request.model_dump(mode="json")}
        )

    def tool(self, node_id: str, run: int) -> AskQuestionsTool:
        """The node's ``ask-questions`` tool for its run ``run``: it files a request."""
        return AskQuestionsTool(self, node_id, run)


def _check_revision(row: RequestRow, revision: int | None) -> None:
    """``409 revision_conflict`` unless the request is at ``revision`` (``None``: any)."""
    if revision is not None and row["revision"] != revision:
        raise ApiError(
            409,
            "revision_conflict",
            f"request {row['request_id']!r} is at revision {row['revision']}, "
            f"not {revision}: read it again",
            {"revision": row["revision"]},
        )


def _title(title: str) -> str:
    return first_line(title, 512) or "A question"


def _reason(reason: str | None) -> str | None:
    return reason.strip() if reason is not None and reason.strip() else None


_TITLE_SCHEMA: dict[str, Any] = {
    "type": "string",
    "maxLength": 200,
    "description": "A one-line summary of what you ask, for the person's inbox.",
}


class AskQuestionsTool(QuestionAnswerTool):
    """The daemon's ``ask-questions``: the questions are filed as a human request (shown
    in the inbox), and the node sleeps until the person responds."""

    description = (
        "Ask a person every question you need answered before you can go on: missing "
        "information, a decision between options, or a confirmation before something hard "
        "to undo. Put ALL pending questions in this one call. They are filed in the "
        "person's inbox; your turn ends right after the call and their answers arrive as "
        "your next message."
    )

    def __init__(self, human: Human, node_id: str, run: int) -> None:
        schema = question_answer_tool().input_schema
        schema["properties"]["title"] = _TITLE_SCHEMA
        super().__init__(input_schema=schema)
        self._human = human
        self._node_id = node_id
        self._run = run

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """File the questions as a request; the text says its id."""
        asked = {k: v for k, v in arguments.items() if k != "title"}
        checked = await super().execute(asked, context)
        questions = (checked.structured or {})["questions"]
        title = first_line(arguments.get("title")) or _title_of(questions)
        # Hashed: a model's call id may be long; the column holds 128 characters.
        key = hashlib.sha256(call_key(self._run).encode()).hexdigest()
        request = await self._human.file_for_node(self._node_id, title, questions, key)
        asked_text = "".join(p.text for p in checked.content if isinstance(p, TextPart))
        text = (
            f"{asked_text}\n\nFiled as request {request.request_id} in the person's inbox. "
            "Your turn ends now; their answers arrive as your next message."
        )
        structured = {**(checked.structured or {}), "request_id": request.request_id}
        return ToolResult(content=(TextPart(text=text),), structured=structured)

    def same_definition(self, other: Tool) -> bool:
        """Each node's tool files for that node: only the very same one is the same."""
        return other is self


def _title_of(questions: list[StoredQuestion]) -> str:
    first = first_line(questions[0]["question"]) or "A question"
    return first if len(questions) == 1 else f"{first} (+{len(questions) - 1} more)"
