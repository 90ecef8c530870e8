"""The local model's prompt format, tool routing, call grammar and call parsing."""

from __future__ import annotations

import json

import pytest
from llama_cpp.llama_grammar import LlamaGrammar

from heron import Message, ToolCall, ToolSchema
from heron.providers._local_prompt import (
    calls_grammar,
    named_file,
    parse_calls,
    pinned_to_file,
    relevant_tools,
    template_messages,
    tool_prompt,
)
from heron.tools import get_current_time

TIME = get_current_time.schema
WRITE = ToolSchema(
    name="fs-write-file",
    description="Write text to a file under the workspace.",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
)
WEATHER = ToolSchema(
    name="get_weather",
    description="Current weather for a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("What time is it in UTC?", ["get-current-time"]),
        ("what's the date today?", ["get-current-time"]),
        ("Save this poem to the file poem.txt", ["fs-write-file"]),
        ("How is the weather in Paris?", ["get_weather"]),
        ("Write a haiku about rivers.", []),
        ("Tell me a joke.", []),
        ("Hello!", []),
    ],
)
def test_routing_picks_the_tools_a_request_names(request_text: str, expected: list[str]) -> None:
    chosen = relevant_tools(request_text, [TIME, WRITE, WEATHER])
    assert [t.name for t in chosen] == expected


def test_routing_keeps_every_tool_of_a_request_naming_two() -> None:
    chosen = relevant_tools("What time is it, and the weather in Paris?", [TIME, WRITE, WEATHER])
    assert [t.name for t in chosen] == ["get-current-time", "get_weather"]


def test_routing_prefers_the_tool_whose_name_holds_the_requests_verb() -> None:
    read = ToolSchema(
        name="fs-read-file",
        description="Read a text file.",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
    )
    # "file" is in both names, so it alone decides nothing; "read" names one of them.
    assert [t.name for t in relevant_tools("read the file a.txt", [WRITE, read])] == [
        "fs-read-file"
    ]
    assert [t.name for t in relevant_tools("write the file a.txt", [WRITE, read])] == [
        "fs-write-file"
    ]
    assert relevant_tools("read me a story", [WRITE, read]) == []


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        # The README's node examples: a file named, no tool's verb (or only "read").
        ("Read pyproject.toml here and report the package's name and version.", "fs-read-file"),
        ("Summarise README.md", "fs-read-file"),
        ("What does docs/guide.md say about setup?", "fs-read-file"),
        ("Save this poem to poem.txt", "fs-write-file"),
        ("Write hello to notes.txt", "fs-write-file"),
        ("List the files here", "fs-list-directory"),
        ("What time is it in UTC?", "get-current-time"),
        # No file in these: "e.g.", "U.S." and "2.0" are no file names.
        ("Tell me about Python 2.0, e.g. its U.S. release.", None),
    ],
)
def test_a_named_file_routes_to_the_file_tool_that_fits(
    request_text: str, expected: str | None
) -> None:
    from heron.tools import filesystem_tools

    tools = [TIME, *(t.schema for t in filesystem_tools("."))]
    chosen = [t.name for t in relevant_tools(request_text, tools)]
    assert chosen == ([expected] if expected else [])


def test_a_routed_call_about_a_named_file_has_its_path_fixed() -> None:
    from heron.tools import filesystem_tools

    assert named_file("Read pyproject.toml here and report its version.") == "pyproject.toml"
    assert named_file("Compare a.txt with b.txt") is None  # two files: nothing is fixed
    assert named_file("What time is it?") is None
    tools = {t.name: t.schema for t in filesystem_tools(".")}
    read = pinned_to_file(tools["fs-read-file"], "pyproject.toml")
    # Only the path, and it can only be that file: the optional arguments are left out.
    assert read.input_schema["properties"] == {
        "path": {"type": "string", "const": "pyproject.toml"}
    }
    grammar = LlamaGrammar.from_string(calls_grammar([read]), verbose=False)
    assert grammar is not None
    write = pinned_to_file(tools["fs-write-file"], "notes.txt")
    assert set(write.input_schema["required"]) == {"path", "content"}  # content stays
    assert pinned_to_file(TIME, "notes.txt") is TIME  # no path: as it is


def test_tool_prompt_lists_every_tool_with_its_schema() -> None:
    text = tool_prompt([TIME, WRITE])
    listed = [
        json.loads(line) for line in text.split("<tools>\n")[1].split("\n</tools>")[0].splitlines()
    ]
    assert [t["name"] for t in listed] == ["get-current-time", "fs-write-file"]
    assert listed[1]["parameters"]["required"] == ["path", "content"]
    assert "<tool_call>[" in text


def test_template_messages_render_calls_results_and_merge_system_text() -> None:
    messages = [
        Message.system("Be brief."),
        Message.user("time?"),
        Message.assistant(
            "", tool_calls=[ToolCall(id="c1", name="get-current-time", arguments={})]
        ),
        Message.tool("boom", tool_call_id="c1", tool_name="get-current-time", is_error=True),
    ]
    rendered = template_messages(messages, [TIME])
    assert [m["role"] for m in rendered] == ["system", "user", "assistant", "tool"]
    assert rendered[0]["content"].startswith("Be brief.\n\nYou can call these tools")
    call_text = rendered[2]["content"]
    assert call_text.startswith("<tool_call>[") and call_text.endswith("</tool_call>")
    assert json.loads(call_text[len("<tool_call>") : -len("</tool_call>")]) == [
        {"name": "get-current-time", "arguments": {}}
    ]
    assert rendered[3]["content"] == "error: boom"


def test_template_messages_without_tools_add_no_tool_prompt() -> None:
    rendered = template_messages([Message.user("hi")], [])
    assert rendered == [{"role": "user", "content": "hi"}]


def test_parse_calls_reads_a_list_or_a_single_object() -> None:
    calls = parse_calls(
        '[{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]</tool_call>'
    )
    assert [(c.name, c.arguments) for c in calls] == [("a", {"x": 1}), ("b", {})]
    assert len({c.id for c in calls}) == 2
    assert parse_calls('{"name": "a", "arguments": {}}')[0].name == "a"


@pytest.mark.parametrize(
    "text", ['[{"name": "a", "arguments": {"x": ', '["a"]', '[{"name": "a", "arguments": 3}]', "7"]
)
def test_parse_calls_refuses_broken_calls(text: str) -> None:
    with pytest.raises(ValueError):
        parse_calls(text)


def test_the_call_grammar_compiles_for_every_tool_shape() -> None:
    odd = ToolSchema(
        name="odd",
        description="",
        input_schema={"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}},
    )
    grammar = calls_grammar([TIME, WRITE, WEATHER, odd])
    assert grammar.rstrip().endswith('root ::= heron-calls "</tool_call>"')
    LlamaGrammar.from_string(grammar, verbose=False)


def test_plain_roles_fold_system_text_and_tool_results_into_alternating_turns() -> None:
    messages = [
        Message.system("Be brief."),
        Message.user("time?"),
        Message.assistant("", tool_calls=[ToolCall(id="c1", name="get-current-time")]),
        Message.tool("noon", tool_call_id="c1", tool_name="get-current-time"),
        Message.tool("boom", tool_call_id="c2", tool_name="get-current-time", is_error=True),
    ]
    rendered = template_messages(messages, [TIME], plain=True)
    assert [m["role"] for m in rendered] == ["user", "assistant", "user"]
    assert rendered[0]["content"].startswith("Be brief.\n\nYou can call these tools")
    assert rendered[0]["content"].endswith("\n\ntime?")
    assert rendered[2]["content"] == (
        "<tool_response>\nnoon\n</tool_response>\n\n<tool_response>\nerror: boom\n</tool_response>"
    )
