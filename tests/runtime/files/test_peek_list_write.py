"""``/v1/files/peek``, ``/v1/files/list`` and ``/v1/files/write`` on a real daemon."""

from __future__ import annotations

import base64
import os
import resource
import stat
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.daemon import Daemon
from tests.support.files import error

MIB = 1024 * 1024


def peek(client: httpx.Client, path: Path | str, **query: Any) -> httpx.Response:
    return client.get("/v1/files/peek", params={"path": str(path), **query})


def listing(client: httpx.Client, path: Path | str, **query: Any) -> httpx.Response:
    return client.get("/v1/files/list", params={"path": str(path), **query})


def write(client: httpx.Client, path: Path | str, content: str, **body: Any) -> httpx.Response:
    return client.post("/v1/files/write", json={"path": str(path), "content": content, **body})


def leftovers(folder: Path) -> list[str]:
    """Temporary files a write left behind."""
    return [name for name in os.listdir(folder) if name.startswith(".tmp-")]


# -- peek --------------------------------------------------------------------


def test_peek_reads_utf8_text(client: httpx.Client, tmp_path: Path) -> None:
    file = tmp_path / "hello.txt"
    file.write_text("héllo wörld\n", encoding="utf-8")
    body = peek(client, file).json()
    assert body["content"] == "héllo wörld\n"
    assert body["encoding"] == "utf-8"
    assert body["size"] == len("héllo wörld\n".encode())
    assert body["truncated"] is False and body["next_offset"] is None
    assert body["path"] == str(file)
    assert body["modified_at"].startswith("20")


def test_peek_sends_bytes_that_are_not_utf8_as_base64(client: httpx.Client, tmp_path: Path) -> None:
    data = bytes(range(256))
    file = tmp_path / "blob.bin"
    file.write_bytes(data)
    body = peek(client, file).json()
    assert body["encoding"] == "base64"
    assert base64.b64decode(body["content"]) == data
    assert body["length"] == 256


def test_peek_windows_page_through_a_file_without_splitting_characters(
    client: httpx.Client, tmp_path: Path
) -> None:
    text = "aé€😀" * 1000  # 1, 2, 3 and 4 byte characters
    file = tmp_path / "multi.txt"
    file.write_text(text, encoding="utf-8")
    pieces, offset, windows = [], 0, 0
    while True:
        body = peek(client, file, offset=offset, limit=1000).json()
        assert body["encoding"] == "utf-8"  # never cut inside a character
        assert body["length"] <= 1000
        pieces.append(body["content"])
        windows += 1
        if not body["truncated"]:
            assert body["next_offset"] is None
            break
        offset = body["next_offset"]
    assert "".join(pieces) == text
    assert windows == -(-len(text.encode()) // 1000) or windows > 10


def test_peek_reports_truncation_and_the_default_window(
    client: httpx.Client, tmp_path: Path
) -> None:
    file = tmp_path / "big.txt"
    file.write_bytes(b"x" * (300 * 1024))
    body = peek(client, file).json()
    assert body["length"] == 256 * 1024 and body["truncated"] is True
    assert body["next_offset"] == 256 * 1024
    rest = peek(client, file, offset=body["next_offset"]).json()
    assert rest["length"] == 44 * 1024 and rest["truncated"] is False
    exact = peek(client, file, limit=300 * 1024).json()
    assert exact["truncated"] is False  # a window ending exactly at the end is whole
    past = peek(client, file, offset=10 * MIB).json()
    assert past["content"] == "" and past["truncated"] is False


def test_peek_reads_proc_files_whose_size_says_zero(client: httpx.Client) -> None:
    body = peek(client, "/proc/self/status").json()
    assert body["size"] == 0
    assert "Pid:" in body["content"]


def test_peek_limits(client: httpx.Client, tmp_path: Path) -> None:
    file = tmp_path / "f"
    file.write_text("x")
    error(peek(client, file, limit=MIB + 1), 422, "invalid_request")
    error(peek(client, file, limit=0), 422, "invalid_request")
    error(peek(client, file, offset=-1), 422, "invalid_request")
    error(peek(client, file, offset=2**64), 422, "invalid_request")
    assert peek(client, file, limit=MIB).status_code == 200


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("relative/file.txt", "relative"),
        ("", "empty"),
        ("/tmp/../etc/passwd", "'..'"),
        ("/tmp/a\0b", "NUL"),
    ],
)
def test_bad_paths_answer_invalid_path_saying_why(
    client: httpx.Client, path: str, reason: str
) -> None:
    for response in (
        peek(client, path),
        listing(client, path),
        write(client, path, "x"),
    ):
        body = error(response, 422, "invalid_path")
        assert reason in body["message"]


def test_paths_are_normalised(client: httpx.Client, tmp_path: Path) -> None:
    file = tmp_path / "n.txt"
    file.write_text("n")
    body = peek(client, f"/{tmp_path}/./n.txt").json()
    assert body["path"] == str(file) and body["content"] == "n"


def test_missing_files_and_wrong_kinds(client: httpx.Client, tmp_path: Path) -> None:
    file = tmp_path / "a-file"
    file.write_text("x")
    error(peek(client, tmp_path / "missing"), 404, "file_not_found")
    error(peek(client, file / "below"), 404, "file_not_found")
    error(listing(client, tmp_path / "no"), 404, "file_not_found")
    error(peek(client, tmp_path), 422, "not_a_file")
    error(listing(client, file), 422, "not_a_directory")
    os.mkfifo(tmp_path / "fifo")
    error(peek(client, tmp_path / "fifo"), 422, "not_a_file")  # refused, not waited on


def test_peek_does_not_open_what_it_refuses(client: httpx.Client, tmp_path: Path) -> None:
    """Opening a device can act on it: a FIFO's waiting writer is let go by any reader.
    The peek refuses the FIFO without opening it, so only this test's reader frees it."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    opened: list[float] = []

    def writer() -> None:
        os.close(os.open(fifo, os.O_WRONLY))  # blocks until some reader opens the FIFO
        opened.append(time.monotonic())

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    error(peek(client, fifo), 422, "not_a_file")
    released = time.monotonic()
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        thread.join(timeout=15)
    finally:
        os.close(reader)
    assert opened and opened[0] >= released, "the peek opened the FIFO"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_denied(client: httpx.Client, tmp_path: Path) -> None:
    file = tmp_path / "secret"
    file.write_text("x")
    file.chmod(0)
    error(peek(client, file), 403, "permission_denied")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0)
    error(listing(client, locked), 403, "permission_denied")
    error(write(client, locked / "new", "x"), 403, "permission_denied")


def test_permission_denied_even_for_root(client: httpx.Client) -> None:
    """Where the tests run as root, pid 1's environment is often still out of reach."""
    try:
        Path("/proc/1/environ").read_bytes()
    except PermissionError:
        error(peek(client, "/proc/1/environ"), 403, "permission_denied")
    else:
        pytest.skip("this process may read /proc/1/environ: nothing to refuse here")


# -- list --------------------------------------------------------------------


def test_list_sorts_directories_first_then_by_name(client: httpx.Client, tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("bb")
    (tmp_path / "A.txt").write_text("a")
    (tmp_path / "zdir").mkdir()
    (tmp_path / "adir").mkdir()
    (tmp_path / ".hidden").write_text("h")
    (tmp_path / "link").symlink_to(tmp_path / "zdir")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    body = listing(client, tmp_path).json()
    names = [entry["name"] for entry in body["entries"]]
    assert names == ["adir", "zdir", "A.txt", "b.txt", "dangling", "link"]
    assert body["total"] == 6 and body["truncated"] is False
    by_name = {entry["name"]: entry for entry in body["entries"]}
    assert by_name["b.txt"]["type"] == "file" and by_name["b.txt"]["size"] == 2
    assert by_name["adir"]["type"] == "directory" and by_name["adir"]["size"] is None
    assert by_name["link"]["type"] == "symlink"
    assert by_name["link"]["target"] == str(tmp_path / "zdir")
    assert by_name["link"]["target_type"] == "directory"
    assert by_name["dangling"]["target_type"] == "missing"
    hidden = listing(client, tmp_path, hidden=True).json()
    assert ".hidden" in [entry["name"] for entry in hidden["entries"]]
    assert hidden["total"] == 7


def test_list_truncates_at_the_limit(client: httpx.Client, tmp_path: Path) -> None:
    for number in range(12):
        (tmp_path / f"f{number:02}").write_text("")
    body = listing(client, tmp_path, limit=5).json()
    assert [entry["name"] for entry in body["entries"]] == ["f00", "f01", "f02", "f03", "f04"]
    assert body["truncated"] is True and body["total"] == 12


def test_list_shows_undecodable_names(client: httpx.Client, tmp_path: Path) -> None:
    os.close(os.open(os.fsencode(tmp_path) + b"/caf\xe9", os.O_CREAT | os.O_WRONLY, 0o644))
    body = listing(client, tmp_path).json()
    assert [entry["name"] for entry in body["entries"]] == ["caf\ufffd"]


# -- write -------------------------------------------------------------------


def test_write_creates_and_replaces_keeping_the_mode(client: httpx.Client, tmp_path: Path) -> None:
    file = tmp_path / "w.txt"
    first = write(client, file, "one")
    assert first.status_code == 200, first.text
    assert first.json()["created"] is True and first.json()["size"] == 3
    assert file.read_text() == "one"
    file.chmod(0o640)
    second = write(client, file, "twö").json()
    assert second["created"] is False and second["size"] == 4
    assert file.read_text(encoding="utf-8") == "twö"
    assert stat.S_IMODE(file.stat().st_mode) == 0o640
    assert leftovers(tmp_path) == []


def test_write_base64_bytes(client: httpx.Client, tmp_path: Path) -> None:
    data = bytes(range(256)) * 4
    file = tmp_path / "blob"
    body = write(client, file, base64.b64encode(data).decode(), encoding="base64").json()
    assert body["size"] == len(data)
    assert file.read_bytes() == data
    error(write(client, file, "not base64!", encoding="base64"), 422, "invalid_content")
    assert file.read_bytes() == data


def test_a_1_mib_write_is_accepted_and_one_byte_more_refused(
    client: httpx.Client, tmp_path: Path
) -> None:
    file = tmp_path / "limit.bin"
    file.write_text("old content")
    response = write(client, file, "a" * MIB)
    assert response.status_code == 200, response.text
    assert file.stat().st_size == MIB
    file.write_text("old content")
    body = error(write(client, file, "a" * (MIB + 1)), 413, "file_too_large")
    assert body["details"] == {"limit": MIB, "size": MIB + 1}
    assert file.read_text() == "old content"
    assert leftovers(tmp_path) == []


def test_the_largest_legal_write_fits_the_body_limit_however_it_is_encoded(
    client: httpx.Client, tmp_path: Path
) -> None:
    file = tmp_path / "control.bin"
    # 1 MiB of control characters is 6 MiB of JSON (\u0001 each): the route decides.
    response = client.post(
        "/v1/files/write",
        content=b'{"path": "' + str(file).encode() + b'", "content": "' + b"\\u0001" * MIB + b'"}',
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 200, response.text
    assert file.read_bytes() == b"\x01" * MIB
    b64 = base64.b64encode(b"\xff" * MIB).decode()
    assert write(client, file, b64, encoding="base64").status_code == 200
    # Other routes keep the daemon's 1 MiB body limit.
    big = client.post("/v1/profiles/ensure", json={"name": "p", "description": "x" * (2 * MIB)})
    error(big, 413, "body_too_large")


def test_write_refusals_leave_the_old_file(client: httpx.Client, tmp_path: Path) -> None:
    file = tmp_path / "keep.txt"
    file.write_text("keep")
    error(write(client, file, "new", overwrite=False), 409, "file_exists")
    error(write(client, tmp_path, "x"), 422, "not_a_file")
    error(write(client, file / "child", "x"), 422, "not_a_directory")
    error(write(client, tmp_path / "no" / "dir" / "f", "x"), 404, "file_not_found")
    lone_surrogate = b'{"path": "' + str(file).encode() + b'", "content": "\\ud800"}'
    response = client.post(
        "/v1/files/write", content=lone_surrogate, headers={"content-type": "application/json"}
    )
    # Refused at the door for every route (not Unicode text), before the write is read.
    error(response, 400, "malformed_json")
    assert file.read_text() == "keep"
    assert leftovers(tmp_path) == []


def test_write_creates_parents_when_asked(client: httpx.Client, tmp_path: Path) -> None:
    file = tmp_path / "a" / "b" / "c.txt"
    body = write(client, file, "deep", create_parents=True).json()
    assert body["created"] is True and file.read_text() == "deep"


def test_write_with_expected_modified_at(client: httpx.Client, tmp_path: Path) -> None:
    file = tmp_path / "edit.txt"
    file.write_text("v1")
    seen = peek(client, file).json()["modified_at"]
    written = write(client, file, "v2", expected_modified_at=seen)
    assert written.status_code == 200, written.text
    # The file changed since `seen`: a second edit based on it is refused.
    body = error(write(client, file, "v3", expected_modified_at=seen), 409, "file_modified")
    assert body["details"]["modified_at"] == written.json()["modified_at"]
    assert file.read_text() == "v2"
    error(write(client, tmp_path / "gone", "x", expected_modified_at=seen), 409, "file_modified")


def test_write_a_file_whose_name_is_as_long_as_allowed(
    client: httpx.Client, tmp_path: Path
) -> None:
    """A name of 252 bytes (63 four-byte characters) is legal; the temporary file's name
    must be too."""
    file = tmp_path / ("😀" * 63)
    response = write(client, file, "long")
    assert response.status_code == 200, response.text
    assert file.read_text() == "long" and leftovers(tmp_path) == []


def test_write_through_a_symlink_keeps_the_link(client: httpx.Client, tmp_path: Path) -> None:
    target = tmp_path / "target.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    body = write(client, link, "new").json()
    assert body["path"] == str(link) and body["created"] is False
    assert link.is_symlink() and target.read_text() == "new"


def test_a_failed_write_keeps_the_old_content(
    daemon: Daemon, client: httpx.Client, tmp_path: Path
) -> None:
    """A write that fails mid-way (the daemon may not grow a file past 64 KiB) leaves the
    old content and no temporary file."""
    assert daemon.process is not None
    file = tmp_path / "survivor.txt"
    file.write_text("old")
    pid = daemon.process.pid
    before = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (64 * 1024, before[1]))
    try:
        response = write(client, file, "n" * (128 * 1024))
    finally:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, before)
    error(response, 507, "insufficient_storage")
    assert file.read_text() == "old"
    assert leftovers(tmp_path) == []
