"""How :class:`~heron.providers.local.LocalProvider` talks to a raw GGUF model.

A local model has no tool-calling API: the tools are described in the system
prompt, a call is the text ``<tool_call>[{"name": ..., "arguments": {...}}]</tool_call>``
(the format SmolLM2 and many small open models were tuned on), and a grammar
built from the tools' JSON schemas makes sure whatever the model writes inside
the tags is a valid call.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any

from .._core import Message, ToolCall, ToolSchema

__all__ = [
    "CALL_CLOSE",
    "CALL_OPEN",
    "calls_grammar",
    "named_file",
    "parse_calls",
    "pinned_to_file",
    "relevant_tools",
    "template_messages",
    "tool_prompt",
]

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"

_WORD = re.compile(r"[a-z0-9]+")
# Words that say nothing about which tool a request needs: function words and
# the generic verbs tool names and descriptions are made of.
_STOPWORDS = frozenset(
    """a all an and any are as at be by can could do does for from get give given has have how i
    if in into is it its me my of on or our please return returns set show tell that the this
    to use using value what whats when where which who why will with would you your run make
    create read write list optional optionally default current new one""".split()
)
_IMAGE_OMITTED = "[image omitted: this model cannot see images]"
# A file named in a request: ``pyproject.toml``, ``docs/guide.md``, ``./run.sh`` (a stem
# of two characters or more, or a folder, and an extension starting with a letter, so
# "e.g.", "U.S." and "2.0" are no files).
_FILE_NAME = re.compile(
    r"(?<![\w/.-])(?:\.{0,2}/)?(?:[\w.-]+/)*[\w-]{2,}(?:\.[\w-]+)*\.[A-Za-z]\w{0,7}(?![\w/])"
)


def tool_prompt(tools: Sequence[ToolSchema]) -> str:
    """The system-prompt section that offers ``tools`` and shows the call format."""
    lines = "\n".join(
        json.dumps(
            {"name": t.name, "description": t.description, "parameters": t.input_schema},
            ensure_ascii=False,
        )
        for t in tools
    )
    return (
        f"You can call these tools:\n<tools>\n{lines}\n</tools>\n"
        f"To call tools, reply with only {CALL_OPEN}[...]{CALL_CLOSE} holding a JSON list "
        'of calls, for example:\n<tool_call>[{"name": "'
        f"{tools[0].name}"
        '", "arguments": {}}]</tool_call>\n'
        "Otherwise answer in plain text. When a tool has answered, use its result "
        "to answer the user."
    )


def _words(text: str, *, generic: bool = False) -> set[str]:
    """Content words of ``text``, lower-cased, with a plural ``s`` removed.

    With ``generic``, the stopwords of ``text`` instead: the function words and
    generic verbs (``read``, ``list`` ...) the content words leave out.
    """
    words = set()
    for word in _WORD.findall(text.lower()):
        if (word in _STOPWORDS) != generic:
            continue
        words.add(word[:-1] if len(word) > 3 and word.endswith("s") else word)
    return words


def relevant_tools(request: str, tools: Sequence[ToolSchema]) -> list[ToolSchema]:
    """The tools a request plainly asks for, by the words it shares with them.

    A content word of the tool's name counts 2 (1 if other tools' names share
    it: "file" says little among ``fs-read-file``, ``fs-write-file`` ...), a
    word of three letters or more from its description or parameter names 1.
    A tool scoring 2 or more is relevant, and so is one scoring 1 whose name
    holds a generic verb of the request ("list the files" and
    ``fs-list-directory``): alone, such a verb means little ("write a haiku"
    is no call to ``fs-write-file``). Among relevant tools only the
    best-scoring are kept, the verb adding 2, so that "read the file" picks
    ``fs-read-file`` rather than every tool about files. A file name in the request
    (``pyproject.toml``) counts as the words "file" and "path", and when it leaves
    file tools tied with no verb of a tool's name in the request, the one reading
    wins: "Summarise README.md" reads it. Small models rarely
    decide to call a tool on their own, so the provider makes its first reply
    to such a request a call to one of these tools.
    """
    asked, asked_generic = _words(request), _words(request, generic=True)
    names = [schema.name.replace("-", " ").replace("_", " ") for schema in tools]
    shared = Counter(word for name in names for word in _words(name))
    # A request naming a file ("Summarise README.md") is about a file and its path; with
    # no verb of any tool's name in it, reading the file is what it asks first (a tie
    # between file tools goes to the reading one).
    names_a_file = bool(_FILE_NAME.search(request))
    if names_a_file:
        asked |= {"file", "path"}
    scored: list[tuple[int, ToolSchema]] = []
    for schema, name in zip(tools, names, strict=True):
        name_words = _words(name)
        properties = schema.input_schema.get("properties", {})
        other = _words(schema.description) | _words(" ".join(properties).replace("_", " "))
        # Two-letter words of a description are file extensions and
        # abbreviations in examples (**/*.py): "hello.py" asks for no glob.
        other = {word for word in other if len(word) > 2}
        score = sum(2 if shared[w] == 1 else 1 for w in asked & name_words)
        score += len(asked & (other - name_words))
        verbs = 2 * len(asked_generic & _words(name, generic=True))
        if score >= 2 or (score == 1 and verbs):
            scored.append((score + verbs, schema))
    best = max((score for score, _ in scored), default=0)
    chosen = [schema for score, schema in scored if score == best]
    if names_a_file and len(chosen) > 1:
        tool_verbs = {w for name in names for w in _words(name, generic=True)}
        if not asked_generic & tool_verbs:
            readers = [s for s in chosen if "read" in _words(s.name, generic=True)]
            chosen = readers or chosen
    return chosen


def named_file(request: str) -> str | None:
    """The one file a request names (``pyproject.toml``), else ``None`` (none, or several)."""
    names = set(_FILE_NAME.findall(request))
    return names.pop() if len(names) == 1 else None


def pinned_to_file(schema: ToolSchema, path: str) -> ToolSchema:
    """``schema`` for a routed call about the file at ``path``: its ``path`` argument fixed
    to it and its optional arguments left out, so the call the grammar lets a small model
    write reads that file whole (left to itself, it wrote ``path.py`` and ``skip_chars``).
    A tool without a ``path`` string parameter is returned as it is."""
    properties = schema.input_schema.get("properties", {})
    if properties.get("path", {}).get("type") != "string":
        return schema
    required = [name for name in schema.input_schema.get("required", []) if name != "path"]
    fixed = {"path": {"type": "string", "const": path}}
    fixed.update({name: properties[name] for name in required if name in properties})
    return ToolSchema(
        name=schema.name,
        description=schema.description,
        input_schema={
            "type": "object",
            "properties": fixed,
            "required": ["path", *required],
            "additionalProperties": False,
        },
    )


def _call_schema(schema: ToolSchema) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"name": {"const": schema.name}, "arguments": schema.input_schema},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def calls_grammar(tools: Sequence[ToolSchema]) -> str:
    """A GBNF grammar for ``[call, ...]</tool_call>``: one or more valid calls.

    The opening tag is not part of it: it is either written by the model before
    the grammar applies or put in the prompt when the call is required.
    """
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    def gbnf(item_schemas: list[dict[str, Any]]) -> str:
        array = {"type": "array", "minItems": 1, "items": {"anyOf": item_schemas}}
        return str(json_schema_to_gbnf(json.dumps(array)))

    try:
        body = gbnf([_call_schema(t) for t in tools])
    except Exception:
        # A schema feature the converter lacks: constrain the names only; the
        # tool still validates its arguments against its full schema.
        any_object = {"type": "object"}
        body = gbnf(
            [
                _call_schema(ToolSchema(name=t.name, description="", input_schema=any_object))
                for t in tools
            ]
        )
    body = re.sub(r"^root ::=", "heron-calls ::=", body, count=1, flags=re.MULTILINE)
    return f'{body}\nroot ::= heron-calls "{CALL_CLOSE}"\n'


def parse_calls(text: str) -> list[ToolCall]:
    """The calls in ``[call, ...]`` (the text after the opening tag).

    Raises ``ValueError`` when the text is not a list of ``{"name", "arguments"}``
    objects (the grammar prevents that, unless generation was cut short).
    """
    body = text.split(CALL_CLOSE, 1)[0].strip()
    data = json.loads(body)
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ValueError("tool calls must be a JSON list")
    calls = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ValueError(f"not a tool call: {item!r}")
        arguments = item.get("arguments", {})
        if not isinstance(arguments, dict):
            raise ValueError(f"arguments of {item['name']} must be an object")
        calls.append(
            ToolCall(id=f"call_{uuid.uuid4().hex[:16]}", name=item["name"], arguments=arguments)
        )
    return calls


def _content(message: Message) -> str:
    pieces = []
    for part in message.parts:
        pieces.append(getattr(part, "text", None) or _IMAGE_OMITTED)
    return "".join(pieces)


def template_messages(
    messages: Sequence[Message], tools: Sequence[ToolSchema], *, plain: bool = False
) -> list[dict[str, str]]:
    """``messages`` as the plain ``{"role", "content"}`` dicts a chat template takes.

    System messages merge into one (with the tool prompt); assistant tool calls
    become their ``<tool_call>`` text; tool results keep the ``tool`` role. With
    ``plain``, for templates that take only alternating user and assistant
    turns, the system text opens the first user turn, tool results become user
    turns in ``<tool_response>`` tags, and neighbouring turns of one role merge.
    """
    system = [m.text for m in messages if m.role == "system" and m.text]
    if tools:
        system.append(tool_prompt(tools))
    out: list[dict[str, str]] = []
    if system and not plain:
        out.append({"role": "system", "content": "\n\n".join(system)})
    for message in messages:
        if message.role == "system":
            continue
        content = _content(message)
        role = message.role
        if role == "assistant" and message.tool_calls:
            calls = [{"name": c.name, "arguments": c.arguments} for c in message.tool_calls]
            content = f"{content}{CALL_OPEN}{json.dumps(calls, ensure_ascii=False)}{CALL_CLOSE}"
        elif role == "tool":
            if message.is_error:
                content = f"error: {content}"
            if plain:
                role, content = "user", f"<tool_response>\n{content}\n</tool_response>"
        if plain and out and out[-1]["role"] == role:
            out[-1]["content"] += "\n\n" + content
        else:
            out.append({"role": role, "content": content})
    if system and plain:
        text = "\n\n".join(system)
        if out and out[0]["role"] == "user":
            out[0]["content"] = f"{text}\n\n{out[0]['content']}"
        else:
            out.insert(0, {"role": "user", "content": text})
    return out
