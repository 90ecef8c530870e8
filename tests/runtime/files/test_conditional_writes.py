"""Conditional writes racing on a real daemon: one writer wins, every other gets 409.

Each round lets 16 clients loose at once (a barrier), each on its own connection, with
the same precondition: the ``modified_at`` a peek answered, or ``overwrite: false`` on a
path that does not exist yet. A lost update is two 200s in one round.
"""

from __future__ import annotations

import stat
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon

from heron._core.files import write_bytes_atomically

pytestmark = pytest.mark.slow

ROUNDS = 100
WRITERS = 16


@pytest.fixture(scope="module")
def clients(daemon: Daemon) -> Iterator[list[httpx.Client]]:
    """One client (and so one connection) per writer."""
    made = [daemon.client() for _ in range(WRITERS)]
    try:
        yield made
    finally:
        for client in made:
            client.close()


def race(clients: list[httpx.Client], bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    """Each client posts its write at the same moment; their answers, in writer order."""
    barrier = threading.Barrier(len(clients))
    answers: list[Any] = [None] * len(clients)

    def writer(number: int) -> None:
        barrier.wait()
        answers[number] = clients[number].post("/v1/files/write", json=bodies[number])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert all(isinstance(answer, httpx.Response) for answer in answers)
    return answers


def outcome(answers: list[httpx.Response]) -> Counter[str]:
    """How many writers got each answer (``200`` or the error code)."""
    return Counter(
        "200" if a.status_code == 200 else f"{a.status_code} {a.json()['error']['code']}"
        for a in answers
    )


def test_one_of_many_writers_with_the_same_modified_at_wins(
    clients: list[httpx.Client], tmp_path: Path
) -> None:
    file = tmp_path / "contended.txt"
    file.write_text("start")
    lost = []
    for round_ in range(ROUNDS):
        seen = clients[0].get("/v1/files/peek", params={"path": str(file)}).json()["modified_at"]
        bodies = [
            {"path": str(file), "content": f"{round_}:{n}", "expected_modified_at": seen}
            for n in range(WRITERS)
        ]
        answers = race(clients, bodies)
        counts = outcome(answers)
        if counts != Counter({"200": 1, "409 file_modified": WRITERS - 1}):
            lost.append((round_, dict(counts)))
            continue
        winner = next(n for n, a in enumerate(answers) if a.status_code == 200)
        assert file.read_text() == f"{round_}:{winner}"
        # Each refusal names the winner's time: what a client retries against.
        written = answers[winner].json()["modified_at"]
        assert written != seen
        refusals = {
            a.json()["error"]["details"]["modified_at"] for a in answers if a is not answers[winner]
        }
        assert refusals == {written}
    assert not lost, f"{len(lost)} of {ROUNDS} rounds did not have exactly one winner: {lost[:5]}"


def test_one_of_many_writers_creating_a_new_file_wins(
    clients: list[httpx.Client], tmp_path: Path
) -> None:
    lost = []
    for round_ in range(ROUNDS):
        file = tmp_path / f"new-{round_}.txt"
        bodies = [
            {"path": str(file), "content": f"{n}", "overwrite": False} for n in range(WRITERS)
        ]
        answers = race(clients, bodies)
        counts = outcome(answers)
        if counts != Counter({"200": 1, "409 file_exists": WRITERS - 1}):
            lost.append((round_, dict(counts)))
            continue
        winner = next(n for n, a in enumerate(answers) if a.status_code == 200)
        assert answers[winner].json()["created"] is True
        assert file.read_text() == str(winner)
    assert not lost, f"{len(lost)} of {ROUNDS} rounds did not have exactly one winner: {lost[:5]}"
    assert not [name for name in tmp_path.iterdir() if name.name.startswith(".tmp-")]


def test_writers_without_a_precondition_all_succeed_and_one_content_stays(
    clients: list[httpx.Client], tmp_path: Path
) -> None:
    """Plain overwrites do not refuse each other; exactly one of them says it created."""
    for round_ in range(10):
        file = tmp_path / f"plain-{round_}.txt"
        answers = race(clients, [{"path": str(file), "content": f"{n}"} for n in range(WRITERS)])
        assert outcome(answers) == Counter({"200": WRITERS})
        assert sum(a.json()["created"] for a in answers) == 1
        assert file.read_text() in {str(n) for n in range(WRITERS)}


def test_an_exclusive_write_refuses_a_name_taken_since_the_check(tmp_path: Path) -> None:
    """What stands behind ``overwrite: false``: the kernel's own refusal (another process
    may make the file after the daemon looked), and no temporary file left."""
    file = tmp_path / "taken.txt"
    file.write_text("theirs")
    with pytest.raises(FileExistsError):
        write_bytes_atomically(file, b"ours", mode=0o600, exclusive=True)
    assert file.read_text() == "theirs" and sorted(tmp_path.iterdir()) == [file]
    fresh = tmp_path / "fresh.txt"
    write_bytes_atomically(fresh, b"ours", mode=0o640, exclusive=True)
    assert fresh.read_bytes() == b"ours" and stat.S_IMODE(fresh.stat().st_mode) == 0o640
    assert sorted(tmp_path.iterdir()) == [fresh, file]


def test_a_write_moves_the_time_past_the_replaced_file(tmp_path: Path) -> None:
    """Two writes within one tick of the file clock must not look alike to a check."""
    file = tmp_path / "ticks.txt"
    file.write_text("old")
    future = time.time_ns() + 3_600 * 10**9  # later than the clock can reach meanwhile
    write_bytes_atomically(file, b"new", mode=0o600, newer_than_ns=future)
    assert file.stat().st_mtime_ns // 1000 == future // 1000 + 1
