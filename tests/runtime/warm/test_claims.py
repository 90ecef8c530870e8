"""prefer_warm, continued: every launch field decides, racing creates, and a claim that
a SIGKILL follows."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, wait_settled, write_script
from tests.support.polling import eventually
from tests.support.warm import create_preferring_warm, wait_warm, warm_ids

from heron.runtime.nodes._types import LAUNCH_FIELDS

BASE_TEXT = "Hello from the default script."


def _daemon(home: Path, pool: int) -> Iterator[Daemon]:
    """A daemon on ``home`` keeping ``pool`` warm nodes per tuple, stopped afterwards."""
    home.mkdir(exist_ok=True)
    default = write_script(home, "default", [BASE_TEXT] * 4)
    daemon = Daemon(home, {"HERON_PROVIDER": default, "HERON_WARM_POOL": str(pool)}).start()
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture(scope="module")
def pool_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    yield from _daemon(tmp_path_factory.mktemp("warm-claims-home"), 2)


def _ready(daemon: Daemon, key: str) -> int:
    with sqlite3.connect(daemon.home / "heron.db") as db:
        query = "SELECT count(*) FROM heron_nodes WHERE warm = ?"
        count: int = db.execute(query, (key,)).fetchone()[0]
    return count


def _key_of(daemon: Daemon, node_id: str) -> str:
    with sqlite3.connect(daemon.home / "heron.db") as db:
        (key,) = db.execute("SELECT warm FROM heron_nodes WHERE node_id = ?", (node_id,)).fetchone()
    return str(key)


def _variants(daemon: Daemon, client: httpx.Client, tmp: Path) -> dict[str, dict[str, Any]]:
    """For each launch field, a create differing from the plain one in that field only."""
    other = client.post("/v1/nodes", json={"no_kickoff": True}).json()["node_id"]
    client.post("/v1/profiles/ensure", json={"name": "elsewhere"}).raise_for_status()
    return {
        "kind": {"kind": "reviewer"},
        "model": {"model": write_script(tmp, "other", ["Other."])},
        "profile": {"profile": "elsewhere"},
        "cwd": {"cwd": str(tmp)},
        "pin_cwd": {"pin_cwd": str(tmp)},  # (also its cwd: a pinned one is one)
        "scopes": {"scopes": ["ask"]},
        "mode": {"mode": "orchestrator"},
        "output_schema": {"output_schema": {"type": "object"}},
        "situational_context": {"situational_context": "It is raining."},
        "root": {"root": False},
        "parent": {"parent": other},
        "creator": {"creator": other},
    }


def test_the_variants_cover_every_launch_field(pool_daemon: Daemon, tmp_path: Path) -> None:
    with pool_daemon.client() as client:
        assert set(_variants(pool_daemon, client, tmp_path)) == set(LAUNCH_FIELDS)


@pytest.fixture(scope="module")
def plain_key(pool_daemon: Daemon) -> str:
    """The launch key of the plain create (no launch field set), once the pool has it."""
    with pool_daemon.client() as client:
        wait_settled(client, create_preferring_warm(client)["node_id"])
    (node_id, *_) = wait_warm(pool_daemon, 2)
    return _key_of(pool_daemon, node_id)


@pytest.mark.parametrize("field", LAUNCH_FIELDS)
def test_a_create_differing_in_any_launch_field_is_cold(
    pool_daemon: Daemon, plain_key: str, tmp_path: Path, field: str
) -> None:
    with pool_daemon.client() as client:
        variant = _variants(pool_daemon, client, tmp_path)[field]
        eventually(lambda: _ready(pool_daemon, plain_key) == 2)
        node = create_preferring_warm(client, **variant)
        assert node["warm"] is False, field
        assert _ready(pool_daemon, plain_key) == 2  # none of the plain tuple's was taken
        served = create_preferring_warm(client)
        assert served["warm"] is True
        assert wait_settled(client, served["node_id"])["outcome"]["output_text"] == BASE_TEXT


@pytest.fixture
def one_warm(tmp_path: Path) -> Iterator[Daemon]:
    """A daemon keeping one warm node per tuple."""
    yield from _daemon(tmp_path / "home", 1)


def _messages(daemon: Daemon, node_id: str) -> list[str]:
    with sqlite3.connect(daemon.home / "heron.db") as db:
        query = "SELECT body FROM heron_messages WHERE node_id = ? ORDER BY message_id"
        return [r[0] for r in db.execute(query, (node_id,)).fetchall()]


def test_two_creates_racing_for_one_warm_node(one_warm: Daemon) -> None:
    with one_warm.client() as client:
        wait_settled(client, create_preferring_warm(client)["node_id"])
        (ready,) = wait_warm(one_warm, 1)

        def create(prompt: str) -> dict[str, Any]:
            with one_warm.client() as own:
                return create_preferring_warm(own, prompt=prompt)

        with ThreadPoolExecutor(2) as pool:
            nodes = list(pool.map(create, ["first racer", "second racer"]))
        assert len({n["node_id"] for n in nodes}) == 2
        (winner,) = [n for n in nodes if n["node_id"] == ready]  # served once, not twice
        assert winner["warm"] is True
        assert _messages(one_warm, ready) == [winner["prompt"]]
        for node in nodes:
            poll = wait_settled(client, node["node_id"])
            assert (poll["node_status"], poll["outcome"]["output_text"]) == ("completed", BASE_TEXT)


@pytest.mark.slow
def test_a_claim_committed_before_a_sigkill_is_a_node_after_it(
    one_warm: Daemon, tmp_path: Path
) -> None:
    # Slow enough that the daemon dies while the claimed node works.
    slow = write_script(tmp_path, "slow", [{"text": "Slowly done.", "delay": 2.0}])
    with one_warm.client() as client:
        wait_settled(client, create_preferring_warm(client, model=slow)["node_id"])
        (ready,) = wait_warm(one_warm, 1)
        served = create_preferring_warm(client, model=slow, name="claimed")
        assert (served["node_id"], served["warm"]) == (ready, True)
    one_warm.kill()
    one_warm.start()
    with one_warm.client() as client:
        node = client.get(f"/v1/nodes/{ready}").json()
        assert (node["name"], node["warm"]) == ("claimed", True)
        poll = wait_settled(client, ready)
        assert (poll["node_status"], poll["outcome"]["output_text"]) == (
            "completed",
            "Slowly done.",
        )
    assert _messages(one_warm, ready) == ["Do it."]


def test_a_warm_node_that_could_not_be_set_up_is_never_served(one_warm: Daemon) -> None:
    nodes = one_warm.home / "nodes"
    with one_warm.client() as client:
        wait_settled(client, create_preferring_warm(client)["node_id"])
        (ready,) = wait_warm(one_warm, 1)
        eventually(lambda: (nodes / ready).is_dir())  # set up: its workspace is made
        # From now on no new node can make its workspace: the refill behind the next
        # create makes a warm node whose run cannot be set up.
        nodes.rename(one_warm.home / "nodes-away")
        nodes.write_text("not a directory")
        served = create_preferring_warm(client)
        assert (served["node_id"], served["warm"]) == (ready, True)
        note = "its run could not be set up"
        eventually(lambda: note in one_warm.log.read_text())
        assert warm_ids(one_warm) == []  # discarded, not kept for a create
        nodes.unlink()
        nodes.mkdir()
        after = create_preferring_warm(client)
        assert after["warm"] is False  # cold: the broken one was not served
        poll = wait_settled(client, after["node_id"])
        assert (poll["node_status"], poll["outcome"]["output_text"]) == ("completed", BASE_TEXT)


def test_scopes_in_another_order_are_the_same_launch_tuple(one_warm: Daemon) -> None:
    with one_warm.client() as client:
        assert create_preferring_warm(client, scopes=["ask", "act"])["warm"] is False
        (ready,) = wait_warm(one_warm, 1)
        served = create_preferring_warm(client, scopes=["act", "ask"])
        assert (served["node_id"], served["warm"], served["scopes"]) == (
            ready,
            True,
            ["act", "ask"],
        )
