"""Two daemons on one PostgreSQL database: a stream opened on one follows a node running
on the other (through the log and ``LISTEN/NOTIFY``), and interrupts, closes and
messages sent to one reach a run going on the other.

Both are real ``heron daemon`` processes, each on its own ``HERON_HOME`` and socket,
sharing one throwaway server (``pg.Cluster``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from tests.support import pg
from tests.support.daemon import SLOW, Daemon, create, wait_settled, wait_status, write_script
from tests.support.polling import eventually
from tests.support.sse import Sse, events, records, stream

from heron.runtime.events._relay import APPLICATION_NAME

pytestmark = pytest.mark.slow

DATABASE = "heron_two"

TIME = {"name": "get-current-time", "arguments": {"timezone": "UTC"}}

STEPS: list[Any] = [
    {"text": "Let me check the time.", "tool_calls": [TIME], "delay": 1.0},
    {"text": "And once more.", "tool_calls": [TIME], "delay": 0.3},
    {"text": "It is noon, twice.", "delay": 0.3},
]
"""A run of three turns, two tool calls and text deltas, slow enough to join mid-run."""


@pytest.fixture(scope="module")
def pair(
    cluster: pg.Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Daemon, Daemon]]:
    """Daemons A and B, each on its own home, on one database."""
    url = cluster.create_database(DATABASE)
    started: list[Daemon] = []
    try:
        for name in ("a", "b"):
            home = tmp_path_factory.mktemp(f"heron-{name}")
            default = write_script(home, "default", [f"Hello from {name}."])
            env = {"HERON_DATABASE_URL": url, "HERON_PROVIDER": default}
            started.append(Daemon(home, {**env, "HERON_SSE_KEEPALIVE": "0.5"}).start())
        yield started[0], started[1]
    finally:
        for daemon in started:
            daemon.stop()


@pytest.fixture
def a(pair: tuple[Daemon, Daemon]) -> Iterator[httpx.Client]:
    with pair[0].client() as client:
        yield client


@pytest.fixture
def b(pair: tuple[Daemon, Daemon]) -> Iterator[httpx.Client]:
    with pair[1].client() as client:
        yield client


def run_on(client: httpx.Client, model: str, **fields: Any) -> str:
    """A node whose run goes on ``client``'s daemon: created without a kickoff (a create's
    run may be drained by any daemon), then woken by a message there (its wake-up runs where
    it is woken)."""
    node_id = str(
        create(client, prompt="Begin.", model=model, no_kickoff=True, **fields)["node_id"]
    )
    woke = client.post(f"/v1/nodes/{node_id}/messages", json={"body": "Go."})
    assert woke.status_code == 202 and woke.json()["delivery"] == "woke", woke.text
    return node_id


def logged(events: list[Sse]) -> list[tuple[int, str, dict[str, Any]]]:
    """The numbered events but text deltas: what crosses daemons."""
    return [
        (e.seq, e.event, e.data)
        for e in events
        if e.id is not None and e.event != "node.output_text.delta"
    ]


def of(records: list[Sse], node_id: str) -> list[Sse]:
    """The node's events among a feed's records (its first is a ``retry:`` line)."""
    return [r for r in records if isinstance(r.data, dict) and r.data.get("node_id") == node_id]


def settled(record: Sse) -> bool:
    return record.event == "node.settled"


class Reader(threading.Thread):
    """Reads a stream on a thread until ``node.settled`` (or the stream ends)."""

    def __init__(self, daemon: Daemon, path: str, until: Any = settled, **headers: str) -> None:
        super().__init__(daemon=True)
        self.got: list[Sse] = []
        self.open = threading.Event()
        self._daemon, self._path, self._until, self._headers = daemon, path, until, headers

    def run(self) -> None:
        with (
            self._daemon.client(timeout=60) as client,
            client.stream(
                "GET",
                self._path,
                headers={k.replace("_", "-"): v for k, v in self._headers.items()},
            ) as response,
        ):
            assert response.status_code == 200, response.read()
            self.open.set()
            for record in records(response):
                if record.event == ":":
                    continue
                self.got.append(record)
                if self._until(record):
                    return


def test_a_stream_on_a_follows_a_node_running_on_b(
    pair: tuple[Daemon, Daemon], a: httpx.Client, b: httpx.Client, tmp_path: Any
) -> None:
    daemon_a, daemon_b = pair
    model = write_script(tmp_path, "three-turns", STEPS)
    feed = Reader(daemon_a, "/v1/events", until=lambda r: False)
    feed.start()
    assert feed.open.wait(30)
    node_id = run_on(b, model)
    # Opened at once, while B's run waits in its first turn: what follows comes live.
    on_a = Reader(daemon_a, f"/v1/nodes/{node_id}/events?after=0")
    on_b = Reader(daemon_b, f"/v1/nodes/{node_id}/events?after=0")
    on_a.start()
    on_b.start()
    on_a.join(60)
    on_b.join(60)
    assert not on_a.is_alive() and not on_b.is_alive()
    from_b = logged(on_b.got)
    assert [kind for _, kind, _ in from_b][-2:] == ["node.status.changed", "node.settled"]
    assert len([k for _, k, _ in from_b if k == "node.tool_call.completed"]) == 2
    # Every event but the deltas, once each, in order, with B's own numbers and data.
    assert logged(on_a.got) == from_b
    numbers = [seq for seq, _, _ in from_b]
    assert numbers == sorted(set(numbers))
    assert not [e for e in on_a.got if e.event == "node.output_text.delta"]
    # The daemon-wide feed on A carries the node's events too (it has no deltas, no ids).
    eventually(
        lambda: [e for e in of(feed.got, node_id) if settled(e)],
        timeout=30,
        what="the node's node.settled on A's feed",
    )
    fed = [(e.seq, e.event, e.data) for e in of(feed.got, node_id)]
    assert fed == from_b[-len(fed) :]
    assert [kind for _, kind, _ in fed][-1] == "node.settled"
    assert len(fed) >= len(from_b) - 1  # at most the create's status came before


def test_a_resume_on_a_with_last_event_id_mid_run(
    pair: tuple[Daemon, Daemon], a: httpx.Client, b: httpx.Client, tmp_path: Any
) -> None:
    daemon_a, _ = pair
    model = write_script(tmp_path, "resume", STEPS)
    node_id = run_on(b, model)
    first = Reader(
        daemon_a,
        f"/v1/nodes/{node_id}/events?after=0",
        until=lambda r: r.event == "node.tool_call.completed",
    )
    first.start()
    first.join(60)
    cursor = first.got[-1].seq
    second = Reader(daemon_a, f"/v1/nodes/{node_id}/events", Last_Event_ID=str(cursor))
    second.start()
    second.join(60)
    assert second.got and settled(second.got[-1])
    assert all(e.seq > cursor for e in second.got if e.id is not None), (cursor, second.got)
    wait_settled(b, node_id)
    with stream(b, node_id, after=0) as response:
        whole = logged(events(response, until=settled))
    assert logged(first.got) + logged(second.got) == whole


def test_interrupt_sent_to_a_stops_the_run_on_b(
    a: httpx.Client, b: httpx.Client, tmp_path: Any
) -> None:
    model = write_script(tmp_path, "slow", [SLOW, "Back again."])
    node_id = run_on(b, model)
    answer = a.post(f"/v1/nodes/{node_id}/interrupt")
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "interrupted"  # the answer says what became of it
    assert b.get(f"/v1/nodes/{node_id}").json()["status"] == "interrupted"
    with stream(a, node_id, after=0) as response:
        seen = events(response, until=lambda r: r.data.get("status") == "interrupted")
    assert seen[-1].event == "node.status.changed"
    # Messaged on A, it wakes there (its script starts over: slow again), and B closes it.
    woke = a.post(f"/v1/nodes/{node_id}/messages", json={"body": "Go on."})
    assert woke.status_code == 202 and woke.json()["delivery"] == "woke"
    closed = b.post(f"/v1/nodes/{node_id}/close")
    assert closed.status_code == 200 and closed.json()["status"] == "cancelled", closed.text
    assert wait_settled(b, node_id)["node_status"] == "cancelled"


def test_close_sent_to_a_settles_the_run_on_b(
    a: httpx.Client, b: httpx.Client, tmp_path: Any
) -> None:
    model = write_script(tmp_path, "slow-close", [SLOW])
    node_id = run_on(b, model)
    answer = a.post(f"/v1/nodes/{node_id}/close", json={"reason": "enough"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "cancelled"
    poll = wait_settled(a, node_id)
    assert poll["node_status"] == "cancelled"
    assert poll["outcome"]["kind"] == "failure"
    assert poll["outcome"]["detail"]["message"] == "enough"
    with stream(b, node_id, after=0) as response:
        kinds = [e.event for e in events(response, until=settled)]
    assert kinds.count("node.settled") == 1


def at_once(node_id: str, a: httpx.Client, b: httpx.Client) -> list[str]:
    """Message the node on both daemons at the same instant; each answer's delivery."""
    barrier = threading.Barrier(2)
    answers: dict[str, str] = {}

    def send(name: str, client: httpx.Client) -> None:
        barrier.wait()
        response = client.post(f"/v1/nodes/{node_id}/messages", json={"body": f"From {name}."})
        assert response.status_code == 202, response.text
        answers[name] = response.json()["delivery"]

    threads = [threading.Thread(target=send, args=pair) for pair in (("a", a), ("b", b))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(answers) == 2
    return list(answers.values())


def test_messages_to_a_dormant_node_on_both_daemons_start_one_run(
    cluster: pg.Cluster, a: httpx.Client, b: httpx.Client, tmp_path: Any
) -> None:
    # A resident root: it answers, then waits dormant for the next message.
    model = write_script(
        tmp_path, "resident", ["First answer.", {"text": "Both read.", "delay": 1.0}, "Third."]
    )
    node_id = run_on(b, model, root_lifecycle="resident")
    eventually(
        lambda: b.get(f"/v1/nodes/{node_id}").json(),
        lambda node: node["status"] == "dormant" and node["runs"] == 1,
        timeout=30,
        what="the node answering and going dormant",
    )
    assert sorted(at_once(node_id, a, b)) == ["queued", "woke"]
    node = eventually(
        lambda: b.get(f"/v1/nodes/{node_id}").json(),
        lambda node: node["status"] == "dormant" and node["turns"] >= 2,
        timeout=30,
        what="the second run answering",
    )
    assert node["runs"] == 2  # one run for both messages
    with cluster.connect(DATABASE) as conn:
        claimed = conn.execute(
            "SELECT body, claimed_run FROM heron_messages WHERE node_id = %s ORDER BY 1",
            (node_id,),
        ).fetchall()
        workflows = conn.execute(
            "SELECT workflow_uuid FROM dbos.workflow_status WHERE workflow_uuid LIKE %s",
            (f"heron:{node_id}:%",),
        ).fetchall()
    assert claimed == [("Begin.", 1), ("From a.", 2), ("From b.", 2), ("Go.", 1)]
    assert sorted(w for (w,) in workflows) == [f"heron:{node_id}:1", f"heron:{node_id}:2"]


def test_the_stream_goes_on_after_the_listening_connection_drops(
    cluster: pg.Cluster, pair: tuple[Daemon, Daemon], b: httpx.Client, tmp_path: Any
) -> None:
    daemon_a, _ = pair

    def listening() -> list[int]:
        with cluster.connect(DATABASE) as conn:
            found = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s",
                (APPLICATION_NAME,),
            ).fetchall()
        return sorted(pid for (pid,) in found)

    before = eventually(listening, lambda pids: len(pids) == 2, what="both daemons listening")
    model = write_script(tmp_path, "after-drop", STEPS)
    node_id = run_on(b, model)
    on_a = Reader(daemon_a, f"/v1/nodes/{node_id}/events?after=0")
    on_a.start()
    assert on_a.open.wait(30)
    with cluster.connect(DATABASE) as conn:  # every daemon's listener, mid-run
        for pid in before:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    on_a.join(60)
    assert on_a.got and settled(on_a.got[-1])
    with stream(b, node_id, after=0) as response:
        assert logged(on_a.got) == logged(events(response, until=settled))
    after = eventually(listening, lambda pids: len(pids) == 2, what="both listening again")
    assert not set(after) & set(before)


def test_a_closing_a_dormant_node_b_ran_numbers_on_above_b(
    a: httpx.Client, b: httpx.Client, tmp_path: Any
) -> None:
    model = write_script(tmp_path, "answer", ["Answered."])
    node_id = run_on(b, model, root_lifecycle="resident")
    wait_status(b, node_id, "dormant")
    with stream(b, node_id, after=0) as response:  # B numbered every event so far
        before = logged(events(response, until=settled))  # (its answer's settlement)
    closed = a.post(f"/v1/nodes/{node_id}/close")
    assert closed.status_code == 200 and closed.json()["status"] == "cancelled", closed.text
    last = before[-1][0]
    # A's settlement is numbered right above B's last event, and B's hub (behind: nobody
    # read it meanwhile) catches up from the log before replaying.
    for client in (b, a):
        with stream(client, node_id, after=0) as response:
            whole = logged(events(response, until=lambda r: settled(r) and r.seq > last))
        assert whole[: len(before)] == before
        tail = [(seq, kind) for seq, kind, _ in whole[len(before) :]]
        assert tail == [(last + 1, "node.status.changed"), (last + 2, "node.settled")]


def test_messages_to_a_node_never_run_on_both_daemons_queue_its_prompt_once(
    cluster: pg.Cluster, a: httpx.Client, b: httpx.Client, tmp_path: Any
) -> None:
    model = write_script(tmp_path, "never-run", [{"text": "Read them all.", "delay": 1.0}])
    node_id = create(b, prompt="The brief.", model=model, no_kickoff=True)["node_id"]
    assert sorted(at_once(node_id, a, b)) == ["queued", "woke"]
    assert wait_settled(a, node_id)["outcome"]["output_text"] == "Read them all."
    with cluster.connect(DATABASE) as conn:
        bodies = conn.execute(
            "SELECT body, claimed_run FROM heron_messages WHERE node_id = %s ORDER BY message_id",
            (node_id,),
        ).fetchall()
    assert bodies[0] == ("The brief.", 1)
    assert sorted(bodies[1:]) == [("From a.", 1), ("From b.", 1)]
    assert b.get(f"/v1/nodes/{node_id}").json()["runs"] == 1
