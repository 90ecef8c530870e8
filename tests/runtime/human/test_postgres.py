"""Human requests on SQLite and PostgreSQL: the store's one-request-per-call filing, the
one-answer-wins transaction, and a node asking and waking on a PostgreSQL daemon."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support import pg
from tests.support.daemon import Daemon, create, node_row, wait_settled, wait_status, write_script

from heron.runtime.daemon import SCHEMAS
from heron.runtime.db._database import create_engine
from heron.runtime.db._handle import Database
from heron.runtime.human._store import HumanStore, NotOpen
from heron.runtime.nodes._store import NodeStore


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[NodeStore]:
    """A migrated store on a fresh database of each kind."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'heron.db'}"
    else:
        cluster: pg.Cluster = request.getfixturevalue("cluster")
        url = cluster.create_database(f"human_{tmp_path.name[-20:].lower()}")
    database = Database(create_engine(url))
    database.migrate(SCHEMAS)
    try:
        yield NodeStore(database)
    finally:
        database.close()


def request_row(request_id: str, node_id: str | None, key: str | None) -> dict[str, Any]:
    now = time.time()
    return {
        "request_id": request_id,
        "node_id": node_id,
        "profile": "default",
        "status": "open",
        "title": "Q",
        "questions": [{"question": "Q?", "context": "", "choices": [], "multiple": False}],
        "body": None,
        "response": None,
        "progress": [],
        "reason": None,
        "revision": 1,
        "call_key": key,
        "created_at": now,
        "updated_at": now,
        "resolved_at": None,
    }


def test_a_call_files_one_request_however_often_it_runs(store: NodeStore) -> None:
    async def go() -> None:
        human = HumanStore(store.db)
        await store.insert_node(node_row("n1", status="dormant"), None)
        first = await human.add_request(request_row("hr_a", "n1", "k1"))
        again = await human.add_request(request_row("hr_b", "n1", "k1"))
        assert again["request_id"] == first["request_id"] == "hr_a"
        other = await human.add_request(request_row("hr_c", "n1", "k2"))
        assert other["request_id"] == "hr_c"
        # Requests for nobody have no key: each is its own.
        await human.add_request(request_row("hr_d", None, None))
        await human.add_request(request_row("hr_e", None, None))
        listed = await human.human_requests(statuses=["open"])
        assert sorted(r["request_id"] for r in listed) == ["hr_a", "hr_c", "hr_d", "hr_e"]

    asyncio.run(go())


def test_the_answer_and_its_message_are_one_transaction(store: NodeStore) -> None:
    async def go() -> None:
        human = HumanStore(store.db)
        await store.insert_node(node_row("n1", status="dormant", runs=1), None)
        await human.add_request(request_row("hr_a", "n1", None))

        def refuse(row: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
            raise ValueError("refused")

        with pytest.raises(ValueError):
            await human.change_request("hr_a", refuse)
        assert await store.claim_messages("n1", 2) == []  # nothing was queued
        answered = await human.change_request(
            "hr_a", lambda row: ({"status": "answered"}, "the answer")
        )
        assert answered["status"] == "answered" and answered["resolved_at"] is not None
        assert await store.claim_messages("n1", 2) == ["the answer"]
        with pytest.raises(NotOpen):
            await human.change_request("hr_a", lambda row: ({"status": "dismissed"}, "late"))
        assert await store.claim_messages("n1", 3) == []

    asyncio.run(go())


@pytest.mark.slow
def test_on_postgresql_a_node_asks_and_one_of_two_answers_wins(
    pg_daemon: Daemon, tmp_path: Path
) -> None:
    ask = {"name": "ask-questions", "arguments": {"questions": [{"question": "Go?"}]}}
    model = write_script(tmp_path, "ask", [{"tool_calls": [ask]}, "Went."])
    with pg_daemon.client() as client:
        node_id = create(client, prompt="go", scopes=["ask"], model=model)["node_id"]
        wait_status(client, node_id, "dormant")
        (ticket,) = client.get("/v1/human/inbox", params={"node_id": node_id}).json()
        path = f"/v1/human/inbox/{ticket['ticket_id']}/respond"
        answers: list[httpx.Response] = []
        start = threading.Barrier(2)

        def answer(text: str) -> None:
            with pg_daemon.client() as own:
                start.wait()
                answers.append(own.post(path, json={"text": text}))

        threads = [threading.Thread(target=answer, args=(t,)) for t in ("yes", "no")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(r.status_code for r in answers) == [200, 409]
        assert wait_settled(client, node_id)["outcome"]["output_text"] == "Went."
        kept = client.get(f"/v1/human/inbox/{ticket['ticket_id']}/response").json()
        winner = next(r for r in answers if r.status_code == 200).json()
        assert kept["text"] == winner["response"]["text"]
