"""prefer_warm: creates served by pre-started nodes, which nobody else ever sees."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from tests.support.daemon import Daemon, wait_settled, write_script
from tests.support.polling import eventually
from tests.support.warm import create_preferring_warm, wait_warm, warm_ids

from heron.runtime import RuntimeConfig

T = TypeVar("T")


@pytest.fixture
def warm_daemon(tmp_path: Path) -> Iterator[Daemon]:
    home = tmp_path / "home"
    home.mkdir()
    default = write_script(home, "default", ["Hello from the default script."])
    daemon = Daemon(home, {"HERON_PROVIDER": default, "HERON_WARM_POOL": "2"}).start()
    try:
        yield daemon
    finally:
        daemon.stop()


def _events(daemon: Daemon, node_id: str) -> list[tuple[int, str]]:
    with sqlite3.connect(daemon.home / "heron.db") as db:
        rows = db.execute(
            "SELECT sequence_number, type FROM heron_events WHERE node_id = ? "
            "ORDER BY sequence_number",
            (node_id,),
        ).fetchall()
    return [(r[0], r[1]) for r in rows]


def test_a_warm_create_is_served_warm_and_behaves_like_a_cold_one(
    warm_daemon: Daemon, tmp_path: Path
) -> None:
    model = write_script(
        tmp_path,
        "tool-then-answer",
        [{"tool_calls": [{"name": "get-current-time"}]}, "Done at some time."],
    )
    launch = {"model": model, "kind": "reviewer", "scopes": ["ask"]}
    with warm_daemon.client() as client:
        cold = create_preferring_warm(client, **launch, name="cold")
        assert cold["warm"] is False  # the first of its tuple: nothing was ready
        pool = wait_warm(warm_daemon, 2)
        warm = create_preferring_warm(client, **launch, name="warm", description="served warm")
        assert warm["warm"] is True and warm["node_id"] in pool
        assert (warm["name"], warm["description"], warm["prompt"]) == (
            "warm",
            "served warm",
            "Do it.",
        )
        outcomes = [wait_settled(client, n["node_id"])["outcome"] for n in (cold, warm)]
        assert outcomes[0] == outcomes[1]
        assert outcomes[0]["output_text"] == "Done at some time."
        nodes = {n["node_id"]: n for n in client.get("/v1/nodes").json()}
        assert nodes[warm["node_id"]]["turns"] == nodes[cold["node_id"]]["turns"] == 2
        assert nodes[warm["node_id"]]["warm"] is True
        # Its events start at its create, as a cold node's do.
        assert _events(warm_daemon, warm["node_id"])[:2] == [
            (1, "node.status.changed"),
            (2, "node.turn.started"),
        ]
        # The pool refills behind the create.
        assert len(wait_warm(warm_daemon, 2)) == 2


def test_warm_nodes_are_invisible(warm_daemon: Daemon) -> None:
    with warm_daemon.client() as client:
        node = create_preferring_warm(client)
        wait_settled(client, node["node_id"])
        hidden = wait_warm(warm_daemon, 2)
        listed = [n["node_id"] for n in client.get("/v1/nodes").json()]
        assert listed == [node["node_id"]]
        assert client.get("/v1/nodes?status=running").json() == []
        assert client.get("/v1/status").json()["nodes"] == {"completed": 1}
        for node_id in hidden:
            assert client.get(f"/v1/nodes/{node_id}").status_code == 404
            answer = client.post(f"/v1/nodes/{node_id}/messages", json={"body": "hi"})
            assert answer.status_code == 404


def test_creates_that_do_not_match_are_cold(warm_daemon: Daemon, tmp_path: Path) -> None:
    other = write_script(tmp_path, "other", ["Other."])
    with warm_daemon.client() as client:
        create_preferring_warm(client)
        wait_warm(warm_daemon, 2)
        assert create_preferring_warm(client, model=other)["warm"] is False  # another tuple
        assert create_preferring_warm(client, scopes=["ask"])["warm"] is False
        assert create_preferring_warm(client, kind="planner")["warm"] is False
        assert create_preferring_warm(client, prefer_warm=False)["warm"] is False
        given = create_preferring_warm(client, node_id="my-own-id")
        assert (given["node_id"], given["warm"]) == ("my-own-id", False)
        quiet = create_preferring_warm(client, no_kickoff=True)
        assert (quiet["status"], quiet["warm"]) == ("dormant", False)
        # None of those took a warm node of the first tuple.
        assert create_preferring_warm(client)["warm"] is True


@pytest.mark.slow
def test_warm_nodes_are_discarded_at_a_restart(warm_daemon: Daemon) -> None:
    with warm_daemon.client() as client:
        first = create_preferring_warm(client)
        wait_settled(client, first["node_id"])
    wait_warm(warm_daemon, 2)
    warm_daemon.stop()
    warm_daemon.start()
    assert warm_ids(warm_daemon) == []
    with warm_daemon.client() as client:
        assert [n["node_id"] for n in client.get("/v1/nodes").json()] == [first["node_id"]]
        again = create_preferring_warm(client)
        assert again["warm"] is False  # the pool starts empty, and fills again
        wait_warm(warm_daemon, 2)
        served = create_preferring_warm(client)
        assert served["warm"] is True
        poll = wait_settled(client, served["node_id"])
        assert poll["outcome"]["output_text"] == "Hello from the default script."


@pytest.mark.slow
def test_warm_nodes_left_by_a_killed_daemon_are_discarded(warm_daemon: Daemon) -> None:
    with warm_daemon.client() as client:
        wait_settled(client, create_preferring_warm(client)["node_id"])
    wait_warm(warm_daemon, 2)
    warm_daemon.kill()
    warm_daemon.start()
    assert warm_ids(warm_daemon) == []
    with warm_daemon.client() as client:
        assert client.get("/v1/status").json()["nodes"] == {"completed": 1}


@pytest.mark.slow
def test_the_pool_can_be_turned_off(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    default = write_script(home, "default", ["Hi."])
    daemon = Daemon(home, {"HERON_PROVIDER": default, "HERON_WARM_POOL": "0"}).start()
    try:
        with daemon.client() as client:
            for _ in range(3):
                node = create_preferring_warm(client)
                assert node["warm"] is False
                wait_settled(client, node["node_id"])
        assert warm_ids(daemon) == []
    finally:
        daemon.stop()


@pytest.mark.parametrize("value", ["-1", "lots", "65"])
def test_a_bad_pool_size_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("HERON_WARM_POOL", value)
    with pytest.raises(ValueError, match="HERON_WARM_POOL must be a whole number"):
        RuntimeConfig.from_env()


def test_closing_a_parent_leaves_warm_nodes_for_its_children_alone(warm_daemon: Daemon) -> None:
    with warm_daemon.client() as client:
        parent = client.post("/v1/nodes", json={"no_kickoff": True}).json()["node_id"]
        child = create_preferring_warm(client, parent=parent)
        assert child["warm"] is False and child["parent"] == parent
        hidden = wait_warm(warm_daemon, 2)
        client.post(f"/v1/nodes/{parent}/close")
        assert client.get(f"/v1/nodes/{child['node_id']}").json()["status"] in (
            "completed",
            "cancelled",
        )
        assert warm_ids(warm_daemon) == hidden
        with sqlite3.connect(warm_daemon.home / "heron.db") as db:
            marks = ",".join("?" * len(hidden))
            settled = db.execute(
                f"SELECT count(*) FROM heron_outcomes WHERE node_id IN ({marks})", hidden
            ).fetchone()[0]
        assert settled == 0


def test_a_changed_kind_is_not_served_by_nodes_made_before(warm_daemon: Daemon) -> None:
    kinds = warm_daemon.home / "kinds"
    kinds.mkdir()
    (kinds / "scribe.toml").write_text('instruction = "Write."\n')
    with warm_daemon.client() as client:
        assert create_preferring_warm(client, kind="scribe")["warm"] is False
        stale = wait_warm(warm_daemon, 2)
        assert eventually(lambda: all((warm_daemon.home / "nodes" / n).is_dir() for n in stale))
        (kinds / "scribe.toml").write_text('instruction = "Write tersely, in English."\n')
        assert create_preferring_warm(client, kind="scribe")["warm"] is False

        # The pool fills for the kind as it is; the nodes made before are discarded,
        # their workspaces too.
        def replaced() -> list[str] | None:
            ids = warm_ids(warm_daemon)
            return ids if len(ids) == 2 and set(ids).isdisjoint(stale) else None

        fresh = eventually(replaced)
        assert eventually(lambda: not any((warm_daemon.home / "nodes" / n).exists() for n in stale))
        served = create_preferring_warm(client, kind="scribe")
        assert served["warm"] is True and served["node_id"] in fresh
