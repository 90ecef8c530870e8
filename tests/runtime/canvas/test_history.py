"""History over nodes' transcripts on a real daemon: search, grep, read and stats."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon, create, wait_settled, write_script

from heron import api

TIME = {"name": "get-current-time", "arguments": {}}


def report(body: str) -> dict[str, Any]:
    return {"name": "push-report", "arguments": {"tier": "progress", "body": body}}


@pytest.fixture(scope="module")
def worked(daemon: Daemon, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Two settled nodes whose transcripts hold tool calls, and one never run."""
    home = tmp_path_factory.mktemp("history-scripts")
    with daemon.client() as client:
        clock = write_script(
            home,
            "clock",
            [
                {"text": "Let me check the clock.", "tool_calls": [TIME]},
                {"tool_calls": [report("The pelican migration starts at dawn.")]},
                "The heron flies north at dawn.\nSecond line of the answer.\nThird line.",
            ],
        )
        pelican = write_script(home, "pelican", ["A pelican is not a heron, though both fish."])
        made = {
            "clock": create(client, prompt="When does the heron fly?", model=clock)["node_id"],
            "pelican": create(client, prompt="Tell me about pelicans", model=pelican)["node_id"],
            "idle": create(client, prompt="An idle egret task", no_kickoff=True)["node_id"],
        }
        wait_settled(client, made["clock"])
        wait_settled(client, made["pelican"])
    return made


def post(client: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(f"/v1/canvas/history/{path}", json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


class TestRead:
    def test_the_transcript_reads_in_pages_with_tool_calls_and_results(
        self, client: httpx.Client, worked: dict[str, str]
    ) -> None:
        node_id = worked["clock"]
        whole = client.get("/v1/canvas/history/read", params={"node_id": node_id}).json()
        api.HistoryPage.model_validate(whole)
        roles = [m["role"] for m in whole["messages"]]
        assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
        assert whole["total"] == 6 and whole["next_offset"] is None
        assert [m["index"] for m in whole["messages"]] == list(range(6))
        user, asked, answered = whole["messages"][:3]
        assert user["text"] == "When does the heron fly?"
        assert asked["text"] == "Let me check the clock."
        assert [c["name"] for c in asked["tool_calls"]] == ["get-current-time"]
        assert answered["tool_name"] == "get-current-time"
        assert answered["tool_call_id"] == asked["tool_calls"][0]["id"]
        assert answered["is_error"] is False and answered["text"]
        assert whole["messages"][-1]["text"].startswith("The heron flies north at dawn.")

        first = client.get(
            "/v1/canvas/history/read", params={"node_id": node_id, "limit": 4}
        ).json()
        assert len(first["messages"]) == 4 and first["next_offset"] == 4
        rest = client.get(
            "/v1/canvas/history/read",
            params={"node_id": node_id, "offset": first["next_offset"], "limit": 4},
        ).json()
        assert [m["index"] for m in rest["messages"]] == [4, 5] and rest["next_offset"] is None
        assert first["messages"] + rest["messages"] == whole["messages"]
        past = client.get("/v1/canvas/history/read", params={"node_id": node_id, "offset": 50})
        assert past.json()["messages"] == [] and past.json()["total"] == 6

    def test_a_node_that_never_ran_has_its_prompt_as_its_transcript(
        self, client: httpx.Client, worked: dict[str, str]
    ) -> None:
        page = client.get("/v1/canvas/history/read", params={"node_id": worked["idle"]}).json()
        assert page["messages"] == [
            {
                "index": 0,
                "role": "user",
                "text": "An idle egret task",
                "tool_calls": [],
                "tool_call_id": None,
                "tool_name": None,
                "is_error": False,
            }
        ]


class TestSearch:
    def test_hits_are_ranked_with_snippets(
        self, client: httpx.Client, worked: dict[str, str]
    ) -> None:
        ids = list(worked.values())
        found = post(client, "search", {"query": "heron dawn", "node_ids": ids})
        api.HistorySearchResult.model_validate(found)
        hits = found["hits"]
        # The idle node's prompt holds neither word: the database leaves it out.
        assert found["nodes_scanned"] == 2 and found["truncated"] is False
        # The answer holds both words: it ranks above messages holding one.
        top = hits[0]
        assert (top["node_id"], top["index"], top["role"]) == (worked["clock"], 5, "assistant")
        assert "heron flies north at dawn" in top["snippet"]
        scores = [h["score"] for h in hits]
        assert scores == sorted(scores, reverse=True) and scores[-1] > 0
        where = {(h["node_id"], h["index"]) for h in hits}
        # Tool call arguments are searched too (the report's body names dawn).
        assert (worked["clock"], 3) in where
        assert (worked["pelican"], 1) in where  # "heron" in the pelican's answer

    def test_filters_limit_and_the_whole_phrase(
        self, client: httpx.Client, worked: dict[str, str]
    ) -> None:
        only = post(client, "search", {"query": "pelican", "node_ids": [worked["pelican"]]})
        assert {h["node_id"] for h in only["hits"]} == {worked["pelican"]}
        assert only["nodes_scanned"] == 1
        one = post(
            client, "search", {"query": "heron", "node_ids": list(worked.values()), "limit": 1}
        )
        assert len(one["hits"]) == 1 and one["truncated"] is True
        phrase = post(
            client, "search", {"query": "pelican migration", "node_ids": list(worked.values())}
        )
        assert (
            phrase["hits"][0]["index"] == 3 and "pelican migration" in phrase["hits"][0]["snippet"]
        )
        none = post(client, "search", {"query": "zebra", "node_ids": list(worked.values())})
        assert none["hits"] == []
        other = post(client, "search", {"query": "heron", "profile": "nobody-here"})
        assert other == {"hits": [], "nodes_scanned": 0, "truncated": False}


class TestGrep:
    def test_matching_lines_come_with_their_context(
        self, client: httpx.Client, worked: dict[str, str]
    ) -> None:
        ids = list(worked.values())
        found = post(client, "grep", {"pattern": r"^Second\b", "node_ids": ids, "context": 1})
        api.HistoryGrepResult.model_validate(found)
        (match,) = found["matches"]
        assert (match["node_id"], match["index"], match["line"]) == (worked["clock"], 5, 2)
        assert match["text"] == "Second line of the answer."
        assert match["before"] == ["The heron flies north at dawn."]
        assert match["after"] == ["Third line."]
        assert found["truncated"] is False and found["timed_out"] is False

        folded = post(client, "grep", {"pattern": "HERON", "node_ids": ids, "ignore_case": True})
        cased = post(client, "grep", {"pattern": "HERON", "node_ids": ids})
        assert len(folded["matches"]) >= 3 and cased["matches"] == []
        tools = post(client, "grep", {"pattern": "get-current-time", "node_ids": ids})
        assert {m["role"] for m in tools["matches"]} == {"assistant"}
        one = post(client, "grep", {"pattern": "heron", "node_ids": ids, "limit": 1})
        assert len(one["matches"]) == 1 and one["truncated"] is True

    def test_a_runaway_pattern_stops_at_the_time_limit(
        self, client: httpx.Client, scripts: Any
    ) -> None:
        node_id = create(client, prompt="a" * 40 + "!", no_kickoff=True)["node_id"]
        found = post(client, "grep", {"pattern": r"(a|aa)+$", "node_ids": [node_id]})
        assert found["timed_out"] is True and found["truncated"] is True
        assert found["matches"] == []


class TestStats:
    def test_messages_tools_turns_and_tokens_are_counted(
        self, client: httpx.Client, worked: dict[str, str]
    ) -> None:
        ids = list(worked.values())
        stats = post(client, "stats", {"node_ids": ids})
        api.HistoryStats.model_validate(stats)
        assert stats["nodes"] == 3
        assert stats["messages_by_role"] == {"assistant": 4, "tool": 2, "user": 3}
        assert stats["messages"] == 9
        assert stats["tool_calls_by_tool"] == {"get-current-time": 1, "push-report": 1}
        assert stats["tool_calls"] == 2 and stats["tool_errors"] == 0
        nodes = [client.get(f"/v1/nodes/{n}").json() for n in ids]
        assert stats["turns"] == sum(n["turns"] for n in nodes) == 4
        assert stats["input_tokens"] == sum(n["input_tokens"] for n in nodes)
        assert stats["output_tokens"] == sum(n["output_tokens"] for n in nodes)
        future = post(client, "stats", {"node_ids": ids, "since": "2999-01-01T00:00:00Z"})
        assert future["nodes"] == 0 and future["messages"] == 0
        past = post(client, "stats", {"node_ids": ids, "since": "2000-01-01T00:00:00Z"})
        assert past["nodes"] == 3
        mine = post(client, "stats", {"node_ids": ids, "profile": "default"})
        assert mine["nodes"] == 3 and mine["messages"] == 9
        other = post(client, "stats", {"node_ids": ids, "profile": "nobody-here"})
        assert other["nodes"] == 0 and other["messages"] == 0
