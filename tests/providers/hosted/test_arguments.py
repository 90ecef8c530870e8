"""Constructor checks and the retry policy's parts, without a server."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from typing import Any

import pytest

from heron import UserError
from heron.providers import (
    AnthropicProvider,
    DeepSeekProvider,
    OllamaProvider,
    OpenAIProvider,
    Provider,
    RetryPolicy,
)
from heron.providers._retry import parse_retry_after

MAKERS: list[Callable[..., Provider]] = [
    lambda **kw: OpenAIProvider("k", **kw),
    lambda **kw: DeepSeekProvider("k", **kw),
    lambda **kw: AnthropicProvider("k", **kw),
    lambda **kw: OllamaProvider(kw.pop("model", "llama3.2"), **kw),
]


@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize("effort", [float("nan"), -0.1, 1.5, "high", True])
def test_bad_think_effort_is_refused_at_construction(make: Any, effort: object) -> None:
    with pytest.raises(UserError, match="think_effort"):
        make(think_effort=effort)


@pytest.mark.parametrize("make", MAKERS)
def test_an_empty_model_is_refused(make: Any) -> None:
    with pytest.raises(UserError, match="model"):
        make(model=" ")


@pytest.mark.parametrize("cls", [OpenAIProvider, DeepSeekProvider, AnthropicProvider])
def test_a_missing_key_is_refused(cls: Any) -> None:
    with pytest.raises(UserError, match="api_key"):
        cls(None)


def test_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (parse_retry_after({"retry-after": later}) or 0) <= 30
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "-5"}) == 0.0


def test_backoff_doubles_up_to_the_cap_with_bounded_jitter() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0)
    for retry, full in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 5.0), (10, 5.0)]:
        assert 0.75 * full <= policy.backoff(retry) <= full
    with pytest.raises(ValueError):
        RetryPolicy(max_retries=-1)
    with pytest.raises(ValueError):
        RetryPolicy(timeout=0)
    with pytest.raises(ValueError):
        RetryPolicy(response_timeout=0)
