"""Chat templates that refuse system and tool messages (Gemma's kind), on the real model."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from heron import SimpleAgent
from heron.providers import LocalProvider, default_model_path
from heron.tools import get_current_time

from .gguf_edit import with_metadata

# ChatML tokens (so SmolLM2 still understands it) under Gemma-style rules.
STRICT_TEMPLATE = (
    "{% if messages[0]['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "{% for message in messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant') }}"
    "{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@pytest.fixture(scope="module")
def strict_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("models") / "smollm2-strict.gguf"
    return with_metadata(default_model_path(), target, "tokenizer.chat_template", STRICT_TEMPLATE)


@pytest.mark.slow
async def test_an_agent_with_tools_runs_on_a_template_without_system_or_tool_roles(
    strict_model: Path,
) -> None:
    provider = LocalProvider(strict_model, max_tokens=96)
    agent = SimpleAgent(provider=provider, instruction="Be brief.", tools=[get_current_time])
    result = await agent.run("What time is it in UTC?")
    assert [c.name for c in result.tool_calls] == ["get-current-time"]
    jsonschema.validate(result.tool_calls[0].arguments, get_current_time.schema.input_schema)
    assert result.reply.strip()
    assert provider._load().plain_roles
