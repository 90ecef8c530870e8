"""Reasoning blocks on a real model: the embedded model given a template that opens ``<think>``.

SmolLM2 does not reason by itself, so the test copies its GGUF file with a chat template
whose generation prompt opens the block (as DeepSeek-R1's does): everything the model
writes is then reasoning until the block is closed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from heron import Message, StreamChunk
from heron.providers import LocalProvider, default_model_path

from .gguf_edit import with_metadata

THINKING_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}{% endif %}"
)
STORY = [Message.user("Write a long story about a dragon.")]


@pytest.fixture(scope="module")
def thinking_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("models") / "smollm2-thinking.gguf"
    return with_metadata(default_model_path(), target, "tokenizer.chat_template", THINKING_TEMPLATE)


def test_a_template_with_think_means_thinking_is_supported(thinking_model: Path) -> None:
    assert LocalProvider(thinking_model).capabilities.supports_thinking


@pytest.mark.slow
async def test_reasoning_streams_as_thinking_until_the_block_closes(thinking_model: Path) -> None:
    provider = LocalProvider(thinking_model, max_tokens=40)
    chunks: list[StreamChunk] = []
    response = await provider.chat(STORY, on_chunk=chunks.append)
    # The model never closes the block itself: all it writes is reasoning.
    assert response.thinking and response.content == ""
    assert "".join(c.thinking or "" for c in chunks) == response.thinking
    assert not any(c.content for c in chunks)


@pytest.mark.slow
async def test_think_effort_bounds_the_reasoning_then_the_model_answers(
    thinking_model: Path,
) -> None:
    provider = LocalProvider(thinking_model, max_tokens=200, think_effort=0.01)
    limit = provider.think_limit()
    assert limit is not None and 64 <= limit < 100
    response = await provider.chat(STORY)
    # The bounds the contract promises, whatever numerics the llama.cpp build has: the
    # reasoning stays within its budget (re-tokenising text may merge or split a few
    # tokens), the whole reply within max_tokens, and the tags never leak across.
    assert response.thinking
    llm = provider._load().llm
    thought = len(llm.tokenize(response.thinking.encode(), add_bos=False, special=False))
    assert thought <= limit + 8, (thought, limit)
    assert response.output_tokens <= 200
    assert "</think>" not in response.content and "<think>" not in response.thinking
    assert response.stop_reason in ("end_turn", "max_tokens")
    # Once the budget is spent the block is closed and the model goes on to its answer.
    assert response.content.strip() or response.stop_reason == "end_turn"


@pytest.mark.slow
async def test_think_effort_zero_closes_the_block_before_it_opens(thinking_model: Path) -> None:
    provider = LocalProvider(thinking_model, max_tokens=40, think_effort=0)
    response = await provider.chat(STORY)
    assert response.thinking is None
    assert response.content.strip()


@pytest.mark.slow
async def test_full_effort_still_leaves_room_to_answer(thinking_model: Path) -> None:
    provider = LocalProvider(thinking_model, max_tokens=80, think_effort=1.0)
    response = await provider.chat(STORY)
    assert response.thinking and response.content.strip()
    assert response.output_tokens <= 80
