"""Mapping the universal 0..1 think effort onto native levels and token budgets."""

import pytest

from heron import resolve_think_effort, think_budget

THREE = ["low", "medium", "high"]
OLLAMA = [False, "low", "medium", "high"]


@pytest.mark.parametrize(
    ("effort", "level"),
    [
        (0.0, "low"),
        (0.33, "low"),
        (1 / 3, "medium"),
        (0.5, "medium"),
        (0.66, "medium"),
        (2 / 3, "high"),
        (1.0, "high"),
        (0, "low"),
        (1, "high"),
    ],
)
def test_three_levels(effort: float, level: str) -> None:
    assert resolve_think_effort(effort, THREE) == level


@pytest.mark.parametrize(
    ("effort", "level"),
    [
        (0.0, False),
        (0.24, False),
        (0.25, "low"),
        (0.49, "low"),
        (0.5, "medium"),
        (0.74, "medium"),
        (0.75, "high"),
        (1.0, "high"),
    ],
)
def test_four_levels(effort: float, level: str | bool) -> None:
    assert resolve_think_effort(effort, OLLAMA) == level


@pytest.mark.parametrize(("effort", "level"), [(-0.5, "low"), (-100, "low"), (1.5, "high")])
def test_out_of_range_efforts_are_clamped(effort: float, level: str) -> None:
    assert resolve_think_effort(effort, THREE) == level


def test_none_means_thinking_was_not_asked_for() -> None:
    assert resolve_think_effort(None, THREE) is None
    assert resolve_think_effort(None, []) is None


def test_empty_levels_are_refused() -> None:
    with pytest.raises(ValueError, match="levels must not be empty"):
        resolve_think_effort(0.5, [])


def test_a_single_level_is_always_chosen() -> None:
    assert {resolve_think_effort(e / 10, ["on"]) for e in range(11)} == {"on"}


def test_works_on_tuples() -> None:
    assert resolve_think_effort(0.9, ("none", "low", "high", "max")) == "max"


@pytest.mark.parametrize("count", [2, 3, 4, 5, 7])
def test_buckets_are_even_and_ordered(count: int) -> None:
    levels = list(range(count))
    efforts = [i / 10_000 for i in range(10_001)]
    chosen = [level for e in efforts if (level := resolve_think_effort(e, levels)) is not None]
    assert len(chosen) == len(efforts)
    assert chosen == sorted(chosen)  # more effort never picks a lower level
    sizes = [chosen.count(level) for level in levels]
    assert max(sizes) - min(sizes) <= 2


class TestThinkBudget:
    def test_documented_example(self) -> None:
        assert think_budget(0.5, minimum=1024, maximum=8192) == 4608

    @pytest.mark.parametrize("effort", [None, 0, 0.0, -0.1, -5])
    def test_no_effort_means_no_thinking(self, effort: float | None) -> None:
        assert think_budget(effort, minimum=1024, maximum=8192) is None

    def test_full_effort_is_the_maximum(self) -> None:
        assert think_budget(1.0, minimum=1024, maximum=8192) == 8192

    def test_effort_above_one_is_clamped(self) -> None:
        assert think_budget(3.0, minimum=1024, maximum=8192) == 8192

    def test_tiny_effort_is_about_the_minimum(self) -> None:
        assert think_budget(1e-9, minimum=1024, maximum=8192) == 1024

    def test_grows_with_effort_within_bounds(self) -> None:
        budgets = [
            b for e in range(1, 21) if (b := think_budget(e / 20, minimum=1000, maximum=5000))
        ]
        assert len(budgets) == 20
        assert all(1000 <= b <= 5000 for b in budgets)
        assert budgets == sorted(budgets)
        assert len(set(budgets)) == len(budgets)

    def test_equal_bounds(self) -> None:
        assert think_budget(0.3, minimum=2048, maximum=2048) == 2048

    @pytest.mark.parametrize(("minimum", "maximum"), [(0, 100), (-1, 100), (200, 100)])
    def test_bad_bounds_are_refused(self, minimum: int, maximum: int) -> None:
        with pytest.raises(ValueError, match="need 0 < minimum <= maximum"):
            think_budget(0.5, minimum=minimum, maximum=maximum)


def test_nan_effort_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="NaN"):
        resolve_think_effort(float("nan"), ["low", "high"])
    with pytest.raises(ValueError, match="NaN"):
        think_budget(float("nan"), minimum=1, maximum=2)
