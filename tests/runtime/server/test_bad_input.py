"""Bad input over the socket: each a 4xx with a stable code and a message, never a 500.

Each refusal also loses nothing: the node a bad request was about is unchanged,
and a refused create leaves no node behind.
"""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, create, wait_settled

from heron.api._common import ID_PATTERN, MODEL_SPEC_PATTERN
from heron.runtime._local import UnixHTTPConnection

LIMIT = 1024 * 1024
"""The daemon's default body limit (``RuntimeConfig.max_body_bytes``)."""

BAD_IDS = ["bad id!", "a" * 300, "-leading-dash", "x;drop"]

NODE_ROUTES = [
    ("GET", "/v1/nodes/{}", None),
    ("GET", "/v1/nodes/{}/outcome", None),
    ("POST", "/v1/nodes/{}/messages", {"body": "hello"}),
    ("POST", "/v1/nodes/{}/interrupt", None),
    ("POST", "/v1/nodes/{}/close", None),
    ("PATCH", "/v1/nodes/{}/config", {"name": "renamed"}),
    ("POST", "/v1/nodes/{}/result", {"result": 1}),
]


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The response is ``status`` with the error body ``code``; returns the error."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    error: dict[str, Any] = body["error"]
    assert set(error) == {"code", "message", "details"}
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    return error


@pytest.fixture
def dormant(client: httpx.Client) -> Iterator[dict[str, Any]]:
    """A dormant node (no kickoff) that bad requests must leave as it is."""
    response = client.post("/v1/nodes", json={"name": "keep me", "no_kickoff": True})
    assert response.status_code == 201, response.text
    yield response.json()


def node_count(client: httpx.Client) -> int:
    return len(client.get("/v1/nodes").json())


def test_malformed_json_is_400(client: httpx.Client, dormant: dict[str, Any]) -> None:
    before = node_count(client)
    node = dormant["node_id"]
    headers = {"content-type": "application/json"}
    for method, url in [
        ("POST", "/v1/nodes"),
        ("POST", f"/v1/nodes/{node}/messages"),
        ("PATCH", f"/v1/nodes/{node}/config"),
        ("POST", f"/v1/nodes/{node}/close"),
    ]:
        for content in [b'{"prompt": ', b"{bad}", b"nul", b"\xff\xfe"]:
            response = client.request(method, url, content=content, headers=headers)
            error = assert_error(response, 400, "malformed_json")
            assert error["details"], "says where the JSON broke"
    assert node_count(client) == before
    assert client.get(f"/v1/nodes/{node}").json() == dormant


def test_unknown_and_mistyped_fields_are_422(client: httpx.Client, dormant: dict[str, Any]) -> None:
    before = node_count(client)
    error = assert_error(
        client.post("/v1/nodes", json={"prompt": "hi", "promt": "typo"}), 422, "invalid_request"
    )
    assert ["body", "promt"] in [item["loc"] for item in error["details"]]
    # Strict: 0 is not false and 1 is not "1" (the body must match the published schema).
    for body in [{"root": 0}, {"name": 1}, {"scopes": "ask"}, [], "text"]:
        assert_error(client.post("/v1/nodes", json=body), 422, "invalid_request")
    node = dormant["node_id"]
    assert_error(
        client.patch(f"/v1/nodes/{node}/config", json={"colour": "red"}), 422, "invalid_request"
    )
    assert_error(client.post(f"/v1/nodes/{node}/messages", json={}), 422, "invalid_request")
    assert_error(
        client.post(f"/v1/nodes/{node}/messages", json={"body": ""}), 422, "invalid_request"
    )
    assert node_count(client) == before
    assert client.get(f"/v1/nodes/{node}").json() == dormant


def test_a_body_that_is_not_json_is_415(client: httpx.Client) -> None:
    before = node_count(client)
    for content_type in ["text/plain", "application/x-www-form-urlencoded", None]:
        headers = {"content-type": content_type} if content_type else {}
        response = client.post("/v1/nodes", content=b'{"prompt": "hi"}', headers=headers)
        error = assert_error(response, 415, "unsupported_media_type")
        assert (content_type or "no Content-Type") in error["message"]
    # A vendor +json type is JSON.
    response = client.post(
        "/v1/nodes",
        content=b'{"no_kickoff": true}',
        headers={"content-type": "application/vnd.heron+json; charset=utf-8"},
    )
    assert response.status_code == 201, response.text
    assert node_count(client) == before + 1


@pytest.mark.parametrize("bad_id", BAD_IDS, ids=["space-bang", "300-chars", "dash", "semicolon"])
def test_invalid_ids_in_the_path_are_400(client: httpx.Client, bad_id: str) -> None:
    for method, template, body in NODE_ROUTES:
        response = client.request(method, template.format(bad_id), json=body)
        error = assert_error(response, 400, "invalid_node_id")
        assert bad_id in error["message"]


def test_an_unknown_node_is_404(client: httpx.Client) -> None:
    for method, template, body in NODE_ROUTES:
        response = client.request(method, template.format("no-such-node"), json=body)
        assert_error(response, 404, "node_not_found")


def _raw(daemon: Daemon, send: Any) -> tuple[int, dict[str, str], dict[str, Any]]:
    """Speak HTTP/1.1 by hand on the socket (``send(conn)``); status, headers, JSON body."""
    conn = UnixHTTPConnection(daemon.socket, timeout=30)
    try:
        send(conn)
        response = conn.getresponse()
        body = response.read()
        headers = {name.lower(): value for name, value in response.getheaders()}
        return response.status, headers, httpx.Response(200, content=body).json()
    finally:
        conn.close()


def test_a_declared_oversized_body_is_413_before_it_is_sent(
    daemon: Daemon, client: httpx.Client
) -> None:
    before = node_count(client)

    def declare(conn: http.client.HTTPConnection) -> None:
        # Only the headers go out: the daemon must answer without waiting for the body.
        conn.putrequest("POST", "/v1/nodes")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(LIMIT * 8))
        conn.endheaders()

    status, headers, body = _raw(daemon, declare)
    assert status == 413
    assert body["error"]["code"] == "body_too_large"
    assert body["error"]["details"] == {"limit": LIMIT}
    assert headers["connection"] == "close"
    assert node_count(client) == before


def test_an_oversized_body_sent_whole_still_gets_its_413(
    daemon: Daemon, client: httpx.Client
) -> None:
    """A client that sends all of a body over the limit reads the 413: the daemon reads
    what it sends before answering, so closing the connection does not reset it away."""
    before = node_count(client)
    body = b'{"prompt": "' + b"x" * (LIMIT * 4) + b'"}'

    def send_all(conn: http.client.HTTPConnection) -> None:
        conn.request("POST", "/v1/nodes", body=body, headers={"Content-Type": "application/json"})

    for _ in range(3):  # (the reset it avoids was a race: try it more than once)
        status, headers, answer = _raw(daemon, send_all)
        assert status == 413
        assert answer["error"]["code"] == "body_too_large"
        assert headers["connection"] == "close"
    assert node_count(client) == before


def test_a_chunked_oversized_body_is_413(daemon: Daemon, client: httpx.Client) -> None:
    before = node_count(client)
    chunk = b" " * (64 * 1024)

    def stream(conn: http.client.HTTPConnection) -> None:
        # No Content-Length: the limit can only be found while the body streams in.
        pieces = iter([b'{"prompt": "', *[chunk] * (LIMIT // len(chunk) + 1), b'"}'])
        conn.request(
            "POST",
            "/v1/nodes",
            body=pieces,
            headers={"Content-Type": "application/json"},
            encode_chunked=True,
        )

    status, _, body = _raw(daemon, stream)
    assert status == 413
    assert body["error"] == {
        "code": "body_too_large",
        "message": f"the request body is over the limit of {LIMIT} bytes",
        "details": {"limit": LIMIT},
    }
    assert node_count(client) == before
    # A body just under the limit still goes through (each text field holds up to 256 KiB).
    text = "x" * (250 * 1024)
    body = {"prompt": text, "situational_context": text, "description": text, "no_kickoff": True}
    body["output_schema"] = {"type": "object", "description": "y" * (LIMIT - 3 * len(text) - 1024)}
    response = client.post("/v1/nodes", json=body)
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("wait", ["26", "-1", "x", "1.5", "", "1e3"])
def test_a_wait_outside_0_to_25_is_422(
    client: httpx.Client, dormant: dict[str, Any], wait: str
) -> None:
    response = client.get(f"/v1/nodes/{dormant['node_id']}/outcome", params={"wait": wait})
    error = assert_error(response, 422, "invalid_request")
    assert error["details"][0]["loc"] == ["query", "wait"]


def test_bad_query_filters_are_422(client: httpx.Client) -> None:
    assert_error(client.get("/v1/nodes", params={"status": "asleep"}), 422, "invalid_request")
    assert_error(client.get("/v1/nodes", params={"root": "maybe"}), 422, "invalid_request")


def test_unknown_route_is_404_and_wrong_method_405(client: httpx.Client) -> None:
    error = assert_error(client.get("/v2/everything"), 404, "not_found")
    assert "/v2/everything" in error["message"]
    response = client.delete("/v1/nodes")
    error = assert_error(response, 405, "method_not_allowed")
    assert set(response.headers["allow"].replace(" ", "").split(",")) == {"GET", "POST"}
    assert "GET" in error["message"]
    assert_error(client.put("/v1/status"), 405, "method_not_allowed")


def test_the_spec_documents_every_error_as_the_error_body(client: httpx.Client) -> None:
    spec = client.get("/openapi.json").json()
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            errors = {k: v for k, v in operation["responses"].items() if k.startswith("4")}
            assert "401" in errors, (method, path)
            for status, answer in errors.items():
                schema = answer["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorResponse"}, (path, status)


def test_an_integer_past_the_largest_is_422_not_a_crash(client: httpx.Client) -> None:
    entry = client.post("/v1/memory", json={"path": "big/numbers", "title": "t", "body": "b"})
    assert entry.status_code == 201, entry.text
    entry_id = entry.json()["entry_id"]
    past = str(2**63)
    checks = [
        client.get(f"/v1/memory/{entry_id}/history", params={"before": past}),
        client.delete(f"/v1/memory/{entry_id}", params={"expected_version": past}),
        client.patch(f"/v1/memory/{entry_id}", json={"title": "x", "expected_version": 2**63}),
        client.get("/v1/canvas/history/read", params={"node_id": "n-x", "offset": past}),
    ]
    for response in checks:
        error = assert_error(response, 422, "invalid_request")
        assert error["details"][0]["loc"][-1] in ("before", "expected_version", "offset")
    largest = client.get(f"/v1/memory/{entry_id}/history", params={"before": str(2**53 - 1)})
    assert largest.status_code == 200 and len(largest.json()) == 1


@pytest.mark.parametrize(
    ("path", "methods"),
    [
        ("/v1/crons/poke", {"POST"}),
        ("/v1/memory/search", {"POST"}),
        ("/v1/nodes/revive-all", {"POST"}),
        ("/v1/profiles/ensure", {"POST"}),
        ("/v1/memory/resolve", {"GET"}),
        ("/v1/model-auth/readiness", {"GET"}),
        ("/v1/nodes", {"GET", "POST"}),
        ("/v1/memory/mem_1", {"GET", "PATCH", "DELETE"}),
    ],
)
def test_a_wrong_method_is_405_allowing_only_the_paths_own_methods(
    client: httpx.Client, path: str, methods: set[str]
) -> None:
    """A fixed path that a parameter route also matches (``/v1/crons/{cron_id}`` takes
    ``poke`` for an id) allows only its own methods; so does the spec."""
    paths = client.get("/openapi.json").json()["paths"]
    template = path if path in paths else "/v1/memory/{entry_id}"
    assert {m.upper() for m in paths[template]} == methods
    for method in ("OPTIONS", "PUT", "TRACE"):
        if method in methods:
            continue
        response = client.request(method, path)
        assert_error(response, 405, "method_not_allowed")
        assert set(response.headers["allow"].replace(" ", "").split(",")) == methods, method


def test_an_unsupported_method_with_no_body_is_405_not_415(client: httpx.Client) -> None:
    response = client.put("/v1/model-auth/readiness")
    assert_error(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "GET"


def test_the_event_stream_is_declared_as_server_sent_events(client: httpx.Client) -> None:
    spec = client.get("/openapi.json").json()
    answer = spec["paths"]["/v1/nodes/{node_id}/events"]["get"]["responses"]["200"]
    assert list(answer["content"]) == ["text/event-stream"]
    item = answer["content"]["text/event-stream"]["itemSchema"]
    assert item["type"] == "object"
    assert set(item["properties"]) >= {"data", "event", "id"}
    assert item["properties"]["data"]["contentMediaType"] == "application/json"


def test_a_whole_number_written_with_a_fraction_is_an_integer(client: httpx.Client) -> None:
    """JSON Schema's ``integer`` takes 10.0 (JSON has one kind of number); a string is not."""
    search = {"query": "anything", "limit": 10.0}
    assert client.post("/v1/memory/search", json=search).status_code == 200
    refused = client.post("/v1/memory/search", json={"query": "anything", "limit": 10.5})
    assert_error(refused, 422, "invalid_request")
    as_text = client.post("/v1/memory/search", json={"query": "anything", "limit": "10"})
    assert_error(as_text, 422, "invalid_request")


def test_a_model_file_name_too_long_is_not_a_crash(client: httpx.Client) -> None:
    """``local:PATH`` and ``scripted:FILE`` are looked up: a name too long for the file
    system is a file that is not there (it answered 500, OSError)."""
    for kind in ("local", "scripted"):
        spec = f"{kind}:/{'x' * 300}"
        response = client.put("/v1/model-config", json={"default_model": spec})
        assert response.status_code < 500, response.text
        readiness = client.get("/v1/model-auth/readiness")
        assert readiness.status_code == 200 and readiness.json()["default_ready"] is False
    client.put("/v1/model-config", json={"default_model": None})


def test_a_malformed_last_event_id_is_refused_even_beside_after(
    client: httpx.Client, dormant: dict[str, Any]
) -> None:
    """``after`` wins over the header, but a header that is not a cursor is still an
    error, as the spec's pattern for it says."""
    path = f"/v1/nodes/{dormant['node_id']}/events"
    refused = client.get(path, params={"after": "0"}, headers={"Last-Event-ID": "soon"})
    error = assert_error(refused, 422, "invalid_request")
    assert "Last-Event-ID" in error["message"]


def test_no_parameter_is_documented_as_nullable(client: httpx.Client) -> None:
    """A parameter is a string on the wire: an optional one is left out, never ``null``
    (a client taking ``anyOf: [string, null]`` at its word sends the text ``null``)."""
    spec = client.get("/openapi.json").json()
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                text = json.dumps(parameter["schema"])
                assert '"null"' not in text, (method, path, parameter["name"])
    events = spec["paths"]["/v1/nodes/{node_id}/events"]["get"]["parameters"]
    (header,) = [p for p in events if p["name"] == "Last-Event-ID"]
    assert header["schema"]["type"] == "string" and "pattern" in header["schema"]


def test_outcome_delivery_is_documented_as_the_object_it_must_be(client: httpx.Client) -> None:
    """The spec said any object would do; the route refuses one without ``action``
    (schemathesis found the mismatch)."""
    spec = client.get("/openapi.json").json()
    field = spec["components"]["schemas"]["NodeCreateRequest"]["properties"]["outcome_delivery"]
    (documented,) = [b for b in field["anyOf"] if b.get("type") == "object"]
    assert documented["required"] == ["action"] and documented["additionalProperties"] is False
    assert documented["properties"]["action"]["enum"] == ["message", "none"]
    refused = client.post("/v1/nodes", json={"outcome_delivery": {"payload": "x"}})
    assert_error(refused, 422, "invalid_outcome_delivery")


def test_an_empty_kind_name_is_refused_by_the_schema(client: httpx.Client) -> None:
    """No kind is called ``""``: the spec says so (it was let through, then refused as an
    unknown kind, a refusal the spec gave no reason for)."""
    for path, body in (
        ("/v1/nodes", {"kind": "", "no_kickoff": True}),
        ("/v1/profiles/ensure", {"name": "empty-kind", "default_kind": ""}),
    ):
        error = assert_error(client.post(path, json=body), 422, "invalid_request")
        assert error["details"][0]["loc"][-1] in ("kind", "default_kind")


def test_a_model_gone_since_is_a_documented_422_on_recycle_and_relaunch(
    client: httpx.Client, tmp_path: Path
) -> None:
    """Recycling or relaunching a node whose script file was deleted since answers
    ``422 invalid_model``, which both routes now document."""
    script = tmp_path / "gone.json"
    script.write_text(json.dumps(["Answered."]))
    body = {"prompt": "Hi.", "model": f"scripted:{script}", "root_lifecycle": "resident"}
    node = create(client, **body)["node_id"]
    wait_settled(client, node)
    script.unlink()
    paths = client.get("/openapi.json").json()["paths"]
    for action in ("recycle", "relaunch-root"):
        assert "422" in paths[f"/v1/nodes/{{node_id}}/{action}"]["post"]["responses"], action
        error = assert_error(client.post(f"/v1/nodes/{node}/{action}"), 422, "invalid_model")
        assert "gone.json" in error["message"]


def _documented(field: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of an optional field's schema."""
    (branch,) = [b for b in field.get("anyOf", [field]) if b.get("type") != "null"]
    return branch


def test_fields_document_the_shapes_the_daemon_checks(client: httpx.Client) -> None:
    """A profile's default model is a model spec, a node's ``cwd`` and ``pin_cwd`` are
    absolute paths: the spec let anything through, the daemon refused it (fuzz findings)."""
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    default_model = schemas["ProfileEnsureRequest"]["properties"]["default_model"]
    assert _documented(default_model)["pattern"] == MODEL_SPEC_PATTERN
    bad_model = {"name": "bad-model", "default_model": "nope"}
    assert_error(client.post("/v1/profiles/ensure", json=bad_model), 422, "invalid_model")
    for name in ("cwd", "pin_cwd"):
        field = schemas["NodeCreateRequest"]["properties"][name]
        assert _documented(field)["pattern"] == "^/", name
        relative = client.post("/v1/nodes", json={name: "relative/dir", "no_kickoff": True})
        assert_error(relative, 422, "invalid_cwd")


def test_a_model_spec_with_blanks_before_its_colon_names_its_kind(
    client: httpx.Client, tmp_path: Path
) -> None:
    """The spec's pattern allows blanks between the kind and the colon; the daemon took
    them for part of the kind (``422 unknown provider 'scripted\\x0b'``)."""
    script = tmp_path / "spaced.json"
    script.write_text(json.dumps(["Spaced out."]))
    for spec in (f"scripted\x0b:{script}", f"Scripted :{script}"):
        assert re.match(MODEL_SPEC_PATTERN, spec)
        node = create(client, prompt="Hi.", model=spec)["node_id"]
        assert wait_settled(client, node)["outcome"]["kind"] == "result", spec


def test_the_history_reads_node_id_is_documented_as_a_node_id(client: httpx.Client) -> None:
    """``GET /v1/canvas/history/read?node_id=`` refuses what is not a node id: its spec
    says so (it documented any string; a fuzz finding)."""
    spec = client.get("/openapi.json").json()
    parameters = spec["paths"]["/v1/canvas/history/read"]["get"]["parameters"]
    (node_id,) = [p for p in parameters if p["name"] == "node_id"]
    assert node_id["schema"]["pattern"] == ID_PATTERN
    refused = client.get("/v1/canvas/history/read", params={"node_id": "{not an id"})
    assert_error(refused, 400, "invalid_node_id")
