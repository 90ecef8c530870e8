"""The error tree: classes, their fields and how they print."""

import pickle

import pytest

import heron
from heron import (
    HeronError,
    OutputValidationError,
    ProviderError,
    RunError,
    ScriptExhaustedError,
    ToolError,
    UserError,
)
from heron._core import errors as errors_module


@pytest.mark.parametrize(
    ("error", "parent"),
    [
        (UserError, HeronError),
        (ScriptExhaustedError, UserError),
        (ProviderError, HeronError),
        (ToolError, HeronError),
        (RunError, HeronError),
        (OutputValidationError, RunError),
        (HeronError, Exception),
    ],
)
def test_hierarchy(error: type[Exception], parent: type[Exception]) -> None:
    assert issubclass(error, parent)


def test_provider_and_user_errors_are_distinct() -> None:
    assert not issubclass(ProviderError, UserError)
    assert not issubclass(UserError, ProviderError)
    assert not issubclass(ToolError, RunError)


def test_every_error_is_exported_from_the_root() -> None:
    assert set(errors_module.__all__) <= set(heron.__all__)
    for name in errors_module.__all__:
        assert getattr(heron, name) is getattr(errors_module, name)


class TestProviderError:
    def test_fields(self) -> None:
        err = ProviderError(
            "rate limited", status=429, code="rate_limit", retryable=True, provider="openai"
        )
        assert err.message == "rate limited"
        assert err.status == 429
        assert err.code == "rate_limit"
        assert err.retryable is True
        assert err.provider == "openai"

    def test_defaults(self) -> None:
        err = ProviderError("boom")
        assert err.status is None
        assert err.code is None
        assert err.retryable is False
        assert err.provider is None

    @pytest.mark.parametrize(
        ("kwargs", "text"),
        [
            ({}, "boom"),
            ({"provider": "anthropic"}, "anthropic: boom"),
            ({"status": 500}, "boom (status 500)"),
            ({"provider": "ollama", "status": 0}, "ollama: boom (status 0)"),
            ({"code": "overloaded", "retryable": True}, "boom"),
        ],
    )
    def test_str(self, kwargs: dict[str, object], text: str) -> None:
        assert str(ProviderError("boom", **kwargs)) == text  # type: ignore[arg-type]

    def test_survives_pickling(self) -> None:
        # Errors cross process boundaries when runs are background jobs.
        err = pickle.loads(
            pickle.dumps(ProviderError("down", status=503, retryable=True, provider="p"))
        )
        assert (err.message, err.status, err.retryable, err.provider) == ("down", 503, True, "p")
        assert str(err) == "p: down (status 503)"


def test_tool_error_prints_just_its_message() -> None:
    assert str(ToolError("no such file: a.txt")) == "no such file: a.txt"


def test_run_error_carries_no_result_by_default() -> None:
    err = RunError("stopped")
    assert str(err) == "stopped"
    assert err.result is None


def test_output_validation_error_keeps_the_errors() -> None:
    details = [{"loc": ["answer"], "msg": "Field required"}]
    err = OutputValidationError("still invalid", errors=details)
    assert err.errors == details
    assert err.result is None
    assert str(err) == "still invalid"
