"""Text that is not Unicode (a lone UTF-16 surrogate) is refused at the door, on every route."""

from __future__ import annotations

import httpx
import pytest


def post_raw(client: httpx.Client, path: str, raw: bytes) -> httpx.Response:
    return client.post(path, content=raw, headers={"content-type": "application/json"})


@pytest.mark.parametrize(
    ("path", "raw", "where"),
    [
        ("/v1/memory", rb'{"path": "notes/a", "body": "x \ud800 y"}', ["body", "body"]),
        ("/v1/memory", rb'{"path": "notes/a", "body": "ok", "tags": ["\udfff"]}', None),
        ("/v1/memory/search", rb'{"query": "\udc00 words"}', ["body", "query"]),
        ("/v1/profiles/ensure", rb'{"name": "p\ud800"}', ["body", "name"]),
        # Surrogates as UTF-8 bytes: json.loads reads bytes with surrogatepass.
        ("/v1/memory", b'{"path": "notes/a", "body": "\xed\xa0\x80"}', ["body", "body"]),
        # A lone surrogate in a key: the answer shows it escaped.
        ("/v1/memory/search", rb'{"query": "q", "\ud800": 1}', ["body", "\\ud800"]),
    ],
)
def test_a_lone_surrogate_is_400_and_keeps_the_daemon_serving(
    client: httpx.Client, path: str, raw: bytes, where: list[str] | None
) -> None:
    response = post_raw(client, path, raw)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "malformed_json" and "surrogate" in error["message"]
    if where is not None:
        assert error["details"]["loc"] == where
    # Nothing was kept, and the connection and daemon serve on.
    listed = client.get("/v1/memory", params={"prefix": "notes/a"})
    assert listed.status_code == 200 and listed.json()["items"] == []


def test_paired_surrogate_escapes_are_text(client: httpx.Client) -> None:
    """An escaped astral character (what ``ensure_ascii`` JSON sends) is kept as itself."""
    raw = rb'{"path": "emoji/pair", "body": "ok \ud83d\ude00", "title": "\u00e9t\u00e9"}'
    response = post_raw(client, "/v1/memory", raw)
    assert response.status_code == 201, response.text
    assert response.json()["body"] == "ok \N{GRINNING FACE}"
    assert response.json()["title"] == "\u00e9t\u00e9"
