"""Choosing a provider by spec string, and reading scripts from JSON files."""

import json
from pathlib import Path
from typing import Any

import pytest

from heron import Message, ProviderError, ScriptExhaustedError, SimpleAgent, ToolCall, UserError
from heron._core.compaction import compaction_request
from heron.providers import (
    PROVIDER_KINDS,
    LocalProvider,
    default_model_path,
    default_provider,
    from_spec,
    load_script,
)
from heron.testing import Reply, ScriptedProvider
from heron.tools import get_current_time

HOSTED_KEYS = {
    "openai": "OPENAI_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
}


@pytest.fixture
def write(tmp_path: Path) -> Any:
    """Write JSON (or raw text) to a fresh file and return its path."""
    count = 0

    def write(data: Any, *, raw: bool = False) -> Path:
        nonlocal count
        count += 1
        path = tmp_path / f"script{count}.json"
        path.write_text(data if raw else json.dumps(data), encoding="utf-8")
        return path

    return write


class TestLoadScript:
    def test_every_kind_of_step(self, write: Any) -> None:
        path = write(
            [
                "Plain answer.",
                {"text": "Checking.", "thinking": "need the clock", "delay": 1},
                {
                    "tool_calls": [
                        {"name": "get-current-time", "arguments": {"timezone": "Asia/Tokyo"}},
                        {"name": "get-current-time", "id": "mine"},
                    ]
                },
            ]
        )
        plain, thinking, calls = load_script(path)
        assert plain == "Plain answer."
        assert isinstance(thinking, Reply)
        assert (thinking.text, thinking.thinking, thinking.delay) == (
            "Checking.",
            "need the clock",
            1.0,
        )
        assert list(thinking.tool_calls) == []
        assert isinstance(calls, Reply)
        assert (calls.text, calls.thinking, calls.delay) == ("", None, 0.0)
        assert list(calls.tool_calls) == [
            ToolCall(id="", name="get-current-time", arguments={"timezone": "Asia/Tokyo"}),
            ToolCall(id="mine", name="get-current-time", arguments={}),
        ]

    def test_a_str_path_and_home_expansion(
        self, write: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = write(["hi"])
        assert load_script(str(path)) == ["hi"]
        monkeypatch.setenv("HOME", str(tmp_path))
        assert load_script(f"~/{path.name}") == ["hi"]

    def test_an_error_step_fails_that_turn_with_a_provider_error(self, write: Any) -> None:
        (step,) = load_script(write([{"error": "overloaded", "status": 529}]))
        assert isinstance(step, ProviderError)
        assert (step.message, step.status, step.provider) == ("overloaded", 529, "scripted")
        with pytest.raises(UserError, match="unknown keys beside 'error': text"):
            load_script(write([{"error": "x", "text": "y"}]))
        with pytest.raises(UserError, match="'status' a whole number"):
            load_script(write([{"error": "x", "status": "500"}]))

    async def test_an_object_script_answers_compaction_requests_with_its_own_step(
        self, write: Any
    ) -> None:
        steps = load_script(write({"steps": ["first", "second"], "compaction": "The summary."}))
        provider = ScriptedProvider(steps, by_history=True)
        asked = [Message.user("hello"), Message.assistant("first"), Message.user("more")]
        summary = await provider.chat(compaction_request("old memory", asked))
        assert summary.content == "The summary."
        assert (await provider.chat(asked)).content == "second"
        assert (await provider.chat(asked[:1])).content == "first"
        assert load_script(write({"steps": ["only"]})) == ["only"]
        with pytest.raises(UserError, match="step compaction: unknown keys bad"):
            load_script(write({"steps": [], "compaction": {"bad": 1}}))
        with pytest.raises(UserError, match="unknown keys compation, extra"):
            load_script(write({"steps": ["x"], "compation": "S", "extra": 1}))
        with pytest.raises(UserError, match="unknown keys step "):
            load_script(write({"step": ["x"]}))
        with pytest.raises(UserError, match="as 'steps'"):
            load_script(write({"compaction": "S"}))

    async def test_an_empty_object_script_still_answers_compaction(self, write: Any) -> None:
        (step,) = load_script(write({"steps": [], "compaction": "S"}))
        provider = ScriptedProvider([step])
        assert (await provider.chat(compaction_request(None, [Message.user("x")]))).content == "S"
        with pytest.raises(ScriptExhaustedError):
            await ScriptedProvider([step]).chat([Message.user("x")])

    def test_an_empty_script_is_allowed(self, write: Any) -> None:
        assert load_script(write([])) == []

    def test_missing_file(self, tmp_path: Path) -> None:
        missing = tmp_path / "nope.json"
        with pytest.raises(UserError, match=f"script file not found: {missing}"):
            load_script(missing)

    def test_a_directory(self, tmp_path: Path) -> None:
        with pytest.raises(UserError, match=f"cannot read script {tmp_path}"):
            load_script(tmp_path)

    def test_invalid_json_names_the_file(self, write: Any) -> None:
        path = write('["unclosed"', raw=True)
        with pytest.raises(UserError, match=f"script {path} is not valid JSON"):
            load_script(path)

    def test_invalid_utf8(self, tmp_path: Path) -> None:
        path = tmp_path / "latin1.json"
        path.write_bytes('["caf\u00e9"]'.encode("latin-1"))
        with pytest.raises(UserError, match="is not valid JSON"):
            load_script(path)

    @pytest.mark.parametrize("data", [{"steps": "hi"}, {}, "hi", 3, None])
    def test_not_a_list(self, write: Any, data: Any) -> None:
        path = write(data)
        with pytest.raises(UserError, match=f"script {path} must hold a JSON list of steps"):
            load_script(path)

    @pytest.mark.parametrize(
        ("step", "problem"),
        [
            (3, "step 2: expected a string or an object, got int"),
            (None, "step 2: expected a string or an object, got NoneType"),
            (["hi"], "step 2: expected a string or an object, got list"),
            ({"text": "hi", "reply": "x", "calls": []}, "step 2: unknown keys calls, reply"),
            ({"tool_calls": [{"arguments": {}}]}, "step 2, tool call 0: needs a string 'name'"),
            ({"tool_calls": [{"name": 7}]}, "step 2, tool call 0: needs a string 'name'"),
            ({"tool_calls": ["get-current-time"]}, "step 2, tool call 0: needs a string 'name'"),
            (
                {"tool_calls": [{"name": "a"}, {"name": "b", "arguments": [1]}]},
                "step 2, tool call 1: 'arguments' must be an object",
            ),
            ({"text": 5}, "step 2: 'text' and 'thinking' must be strings"),
            ({"thinking": ["a"]}, "step 2: 'text' and 'thinking' must be strings"),
            ({"delay": -1}, "step 2: 'delay' must be a non-negative number"),
            ({"delay": "2"}, "step 2: 'delay' must be a non-negative number"),
        ],
    )
    def test_a_bad_step_names_the_file_and_the_step(
        self, write: Any, step: Any, problem: str
    ) -> None:
        path = write(["fine", {"text": "also fine"}, step])
        with pytest.raises(UserError) as caught:
            load_script(path)
        assert str(caught.value) == f"script {path}: {problem}"

    @pytest.mark.parametrize(
        ("step", "key"),
        [
            ({"delay": True}, "delay"),  # JSON true is not a number of seconds
            ({"tool_calls": None}, "tool_calls"),
            ({"tool_calls": 5}, "tool_calls"),
        ],
    )
    def test_wrongly_typed_values_are_user_errors(self, write: Any, step: Any, key: str) -> None:
        path = write(["fine", step])
        with pytest.raises(UserError) as caught:
            load_script(path)
        assert str(caught.value).startswith(f"script {path}: step 1")
        assert key in str(caught.value)

    def test_a_null_call_id_is_never_the_text_none(self, write: Any) -> None:
        # Either reading it as "no id" or refusing it is fine; the id "None" is not.
        path = write([{"tool_calls": [{"name": "get-current-time", "id": None}]}])
        try:
            (step,) = load_script(path)
        except UserError as exc:
            assert str(exc).startswith(f"script {path}: step 0")
        else:
            assert isinstance(step, Reply)
            assert step.tool_calls[0].id == ""


class TestFromSpec:
    def test_scripted_plays_the_file(self, write: Any) -> None:
        path = write(
            [
                {
                    "text": "Checking.",
                    "tool_calls": [
                        {"name": "get-current-time", "arguments": {"timezone": "Asia/Tokyo"}}
                    ],
                },
                "It is late in Tokyo.",
            ]
        )
        provider = from_spec(f"scripted:{path}")
        assert isinstance(provider, ScriptedProvider)
        agent = SimpleAgent(provider=provider, tools=[get_current_time])
        result = agent.run_sync("What time is it in Tokyo?")
        assert result.reply == "It is late in Tokyo."
        (record,) = result.tool_calls
        assert record.name == "get-current-time"
        assert record.arguments == {"timezone": "Asia/Tokyo"}
        assert "+09:00" in record.result
        assert provider.remaining == 0

    def test_kind_is_case_insensitive_and_spaces_are_ignored(self, write: Any) -> None:
        path = write(["hi"])
        assert isinstance(from_spec(f"  Scripted: {path} "), ScriptedProvider)

    def test_scripted_needs_a_file(self) -> None:
        for spec in ("scripted", "scripted:", "scripted:  "):
            with pytest.raises(UserError, match=r"scripted needs a file: scripted:FILE\.json"):
                from_spec(spec)

    def test_scripted_file_errors_come_through(self, tmp_path: Path) -> None:
        with pytest.raises(UserError, match="script file not found"):
            from_spec(f"scripted:{tmp_path / 'missing.json'}")

    @pytest.mark.parametrize("spec", ["gemini", "gemini:pro", "", ":gpt-5", "open ai:gpt-5"])
    def test_unknown_kind_lists_the_known_ones(self, spec: str) -> None:
        with pytest.raises(UserError) as caught:
            from_spec(spec)
        message = str(caught.value)
        assert message.startswith(f"unknown provider {spec!r}")
        assert all(kind in message for kind in PROVIDER_KINDS)

    @pytest.mark.parametrize("kind", sorted(HOSTED_KEYS))
    @pytest.mark.parametrize("model", ["", ":some-model"])
    def test_hosted_kinds_need_their_key(
        self, kind: str, model: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        variable = HOSTED_KEYS[kind]
        monkeypatch.delenv(variable, raising=False)
        with pytest.raises(UserError, match=f"needs an API key: set {variable}$"):
            from_spec(kind + model)

    @pytest.mark.parametrize("kind", sorted(HOSTED_KEYS))
    def test_a_blank_key_counts_as_missing(
        self, kind: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv(HOSTED_KEYS[kind], "   ")
        with pytest.raises(UserError, match=f"set {HOSTED_KEYS[kind]}"):
            from_spec(kind)

    @pytest.mark.parametrize("spec", ["ollama", "ollama:", "ollama: "])
    def test_ollama_needs_a_model(self, spec: str) -> None:
        with pytest.raises(UserError, match=r"ollama needs a model name: ollama:MODEL"):
            from_spec(spec)

    def test_local_is_the_embedded_model(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("HERON_LOCAL_MODEL", raising=False)
        provider = from_spec("local")
        assert isinstance(provider, LocalProvider)
        assert provider.model_path == default_model_path().resolve()

    def test_local_with_a_file(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("HERON_LOCAL_MODEL", raising=False)
        provider = from_spec(f"local:{default_model_path()}")
        assert isinstance(provider, LocalProvider)
        assert provider.model_path == default_model_path().resolve()

    def test_local_with_a_missing_file(self, tmp_path: Path) -> None:
        missing = tmp_path / "none.gguf"
        with pytest.raises(UserError, match=f"local model file not found: {missing}"):
            from_spec(f"local:{missing}")


class TestDefaultProvider:
    def test_heron_provider_chooses(self, write: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("HERON_PROVIDER", f"scripted:{write(['hi'])}")
        assert isinstance(default_provider(), ScriptedProvider)

    @pytest.mark.parametrize("value", [None, "", "  "])
    def test_local_otherwise(self, value: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("HERON_LOCAL_MODEL", raising=False)
        if value is None:
            monkeypatch.delenv("HERON_PROVIDER", raising=False)
        else:
            monkeypatch.setenv("HERON_PROVIDER", value)
        assert isinstance(default_provider(), LocalProvider)

    def test_a_bad_heron_provider_is_a_clear_error(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("HERON_PROVIDER", "nonsense")
        with pytest.raises(UserError, match="unknown provider 'nonsense'"):
            default_provider()

    def test_a_hosted_heron_provider_without_its_key(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("HERON_PROVIDER", "anthropic")
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        with pytest.raises(UserError, match="set ANTHROPIC_API_KEY"):
            default_provider()


def test_provider_kinds() -> None:
    assert PROVIDER_KINDS == ("local", "openai", "deepseek", "anthropic", "ollama", "scripted")


async def test_a_script_step_can_say_the_turn_was_cut_off(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text(json.dumps([{"text": "Half", "stop_reason": "max_tokens"}]))
    result = await SimpleAgent(provider=from_spec(f"scripted:{path}")).run("hi")
    assert (result.reply, result.stop_reason) == ("Half", "max_tokens")
    path.write_text(json.dumps([{"text": "x", "stop_reason": "tired"}]))
    with pytest.raises(UserError, match="'stop_reason' must be one of end_turn, tool_use"):
        from_spec(f"scripted:{path}")
