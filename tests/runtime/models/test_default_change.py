"""The daemon's default model as nodes meet it: a node pre-started on the default as it
was serves no create after the default changed, and a default that cannot be built is
refused before any node meets it."""

from __future__ import annotations

import sqlite3
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import wait_settled, write_script
from tests.support.models import keyless_daemon
from tests.support.polling import eventually

pytestmark = pytest.mark.slow


def _warm_ids(home: Path) -> set[str]:
    with sqlite3.connect(home / "heron.db") as db:
        rows = db.execute("SELECT node_id FROM heron_nodes WHERE warm IS NOT NULL").fetchall()
    return {r[0] for r in rows}


def _wait_warm(home: Path, but: AbstractSet[str] = frozenset(), timeout: float = 30) -> set[str]:
    """The warm nodes other than ``but`` once some are set up (their workspace made)."""
    return eventually(
        lambda: _warm_ids(home) - but,
        lambda ids: bool(ids) and all((home / "nodes" / n).is_dir() for n in ids),
        timeout=timeout,
        interval=0.02,
        what="warm nodes set up",
    )


def _create(client: httpx.Client) -> dict[str, Any]:
    answer = client.post("/v1/nodes", json={"prompt": "Go.", "prefer_warm": True})
    assert answer.status_code == 201, answer.text
    node: dict[str, Any] = answer.json()
    return node


def test_a_warm_node_made_on_the_old_default_serves_no_create_after_it_changed(
    tmp_path: Path,
) -> None:
    old = write_script(tmp_path, "old", ["From the old default."])
    new = write_script(tmp_path, "new", ["From the new default."])
    home = tmp_path / "home"
    daemon = keyless_daemon(home, HERON_PROVIDER=old, HERON_WARM_POOL="1").start()
    try:
        with daemon.client() as client:
            assert _create(client)["warm"] is False
            stale = _wait_warm(home)

            # A default that cannot run: a create after it fails as a cold node would
            # ("could not start", before any turn), not inside a node set up on the old one.
            missing = client.put("/v1/model-config", json={"default_model": "deepseek:chat"})
            assert missing.json()["ready"] is False
            refused = _create(client)
            assert refused["warm"] is False and refused["node_id"] not in stale
            outcome = wait_settled(client, refused["node_id"])["outcome"]
            assert "could not start" in outcome["detail"]["message"]
            assert "DEEPSEEK_API_KEY" in outcome["detail"]["message"]

            client.put("/v1/model-config", json={"default_model": new})
            first = _create(client)
            assert first["warm"] is False  # nothing was made on this default yet
            assert wait_settled(client, first["node_id"])["outcome"]["output_text"] == (
                "From the new default."
            )
            fresh = _wait_warm(home, but=stale)
            # Those made on the old default are discarded.
            eventually(lambda: _warm_ids(home).isdisjoint(stale), interval=0.02)

            served = _create(client)
            assert served["warm"] is True and served["node_id"] in fresh
            poll = wait_settled(client, served["node_id"])
            assert poll["outcome"]["output_text"] == "From the new default."
    finally:
        daemon.stop()


def test_a_local_default_that_is_no_model_is_refused_like_a_broken_script(
    tmp_path: Path,
) -> None:
    pytest.importorskip("llama_cpp")
    bad = tmp_path / "not-a-model.gguf"
    bad.write_bytes(b"this is no GGUF file")
    daemon = keyless_daemon(tmp_path / "home", HERON_PROVIDER=write_script(tmp_path, "d", ["x"]))
    daemon.start()
    try:
        with daemon.client() as client:
            answer = client.put("/v1/model-config", json={"default_model": f"local:{bad}"})
            assert answer.status_code == 422, answer.text
            assert answer.json()["error"]["code"] == "invalid_model"
            assert client.get("/v1/model-config").json()["default_model"] is None
    finally:
        daemon.stop()


def test_the_default_model_comes_last_after_create_kind_and_profile(tmp_path: Path) -> None:
    said = {n: write_script(tmp_path, n, [f"From the {n}."]) for n in ("create", "kind", "profile")}
    config = write_script(tmp_path, "config", ["From the config."])
    home = tmp_path / "home"
    (home / "kinds").mkdir(parents=True)
    (home / "kinds" / "scribe.toml").write_text(
        f'instruction = "Write."\nmodel = "{said["kind"]}"\n'
    )
    daemon = keyless_daemon(home, HERON_PROVIDER=write_script(tmp_path, "env", ["From env."]))
    daemon.start()
    try:
        with daemon.client() as client:
            ensure = {"name": "acme", "default_model": said["profile"]}
            assert client.post("/v1/profiles/ensure", json=ensure).status_code in (200, 201)
            assert client.put("/v1/model-config", json={"default_model": config}).status_code == 200

            def text(**body: Any) -> str:
                answer = client.post("/v1/nodes", json={"prompt": "Go.", **body})
                assert answer.status_code == 201, answer.text
                outcome = wait_settled(client, answer.json()["node_id"])["outcome"]
                return str(outcome["output_text"])

            assert text(model=said["create"], kind="scribe", profile="acme") == "From the create."
            assert text(kind="scribe", profile="acme") == "From the kind."
            assert text(profile="acme") == "From the profile."
            assert text() == "From the config."
    finally:
        daemon.stop()
