"""The filesystem tools on real directories: confinement, reading, atomic writes, edits."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from heron import ToolError, UserError
from heron.tools import (
    LocalToolClient,
    Skill,
    filesystem_tools,
    fs_edit_file_tool,
    fs_glob_tool,
    fs_grep_tool,
    fs_list_directory_tool,
    fs_read_file_tool,
    fs_write_file_tool,
    merge_tools,
)
from heron.tools._fs_paths import Workspace

from .fs_helpers import Workbench

PATH_TOOLS = ["fs-read-file", "fs-write-file", "fs-list-directory", "fs-edit-file", "fs-grep"]
EXTRA = {
    "fs-read-file": {},
    "fs-write-file": {"content": "pwned\n"},
    "fs-list-directory": {},
    "fs-edit-file": {"old_text": "top secret", "new_text": "pwned"},
    "fs-grep": {"pattern": "secret"},
}


@pytest.fixture
def bench(tmp_path: Path) -> Workbench:
    return Workbench(tmp_path)


def test_six_tools_with_the_agreed_names(tmp_path: Path) -> None:
    names = [t.name for t in filesystem_tools(tmp_path)]
    assert names == [
        "fs-read-file",
        "fs-write-file",
        "fs-list-directory",
        "fs-edit-file",
        "fs-glob",
        "fs-grep",
    ]


class TestEquality:
    def test_sets_for_one_root_and_limits_are_equal(self, tmp_path: Path) -> None:
        (tmp_path / "alias").symlink_to(tmp_path, target_is_directory=True)
        first = filesystem_tools(tmp_path)
        for second in [filesystem_tools(tmp_path), filesystem_tools(tmp_path / "alias")]:
            assert [a.same_definition(b) for a, b in zip(first, second, strict=True)] == [True] * 6
        assert not first[0].same_definition(first[1])  # another tool of the set
        (tmp_path / "sub").mkdir()
        other = filesystem_tools(tmp_path / "sub")
        assert not any(a.same_definition(b) for a, b in zip(first, other, strict=True))
        # A limit sets apart the tools that use it, and only those.
        for limits, differing in [
            ({"max_read_chars": 10}, {"fs-read-file"}),
            ({"max_entries": 10}, {"fs-list-directory", "fs-glob"}),
            ({"max_matches": 10}, {"fs-grep"}),
            ({"grep_timeout": 1}, {"fs-grep"}),
        ]:
            other = filesystem_tools(tmp_path, **limits)  # type: ignore[arg-type]
            assert {
                a.name for a, b in zip(first, other, strict=True) if not a.same_definition(b)
            } == differing


class TestSingleToolFactories:
    def test_each_makes_the_tool_filesystem_tools_makes(self, tmp_path: Path) -> None:
        (tmp_path / "alias").symlink_to(tmp_path, target_is_directory=True)
        singles = [
            fs_read_file_tool(tmp_path / "alias"),
            fs_write_file_tool(tmp_path),
            fs_list_directory_tool(tmp_path),
            fs_edit_file_tool(tmp_path),
            fs_glob_tool(tmp_path),
            fs_grep_tool(tmp_path),
        ]
        whole = filesystem_tools(tmp_path)
        assert [t.name for t in singles] == [t.name for t in whole]
        assert all(a.same_definition(b) for a, b in zip(singles, whole, strict=True))
        # Equal, so an agent given the set and a skill bringing one tool registers it once.
        skill = Skill(name="notes", description="d", instructions="i", tools=[singles[1]])
        assert len(merge_tools(whole, [skill])) == 6
        # Limits count, as for the set.
        assert not fs_read_file_tool(tmp_path, max_read_chars=10).same_definition(whole[0])
        limited = filesystem_tools(tmp_path, max_entries=7, max_matches=3, grep_timeout=2)
        assert fs_glob_tool(tmp_path, max_entries=7).same_definition(limited[4])
        assert fs_grep_tool(tmp_path, max_matches=3, grep_timeout=2).same_definition(limited[5])

    async def test_a_single_tool_works_and_stays_in_its_root(self, tmp_path: Path) -> None:
        root = tmp_path / "root"
        root.mkdir()
        client = LocalToolClient([fs_write_file_tool(root), fs_read_file_tool(root)])
        assert [t.name for t in await client.list_tools()] == ["fs-write-file", "fs-read-file"]
        written = await client.call_tool("fs-write-file", {"path": "a/b.txt", "content": "hi\n"})
        assert written.text == "created a/b.txt (3 bytes)"
        assert (await client.call_tool("fs-read-file", {"path": "a/b.txt"})).text == "hi\n"
        escaped = await client.call_tool("fs-write-file", {"path": "../x.txt", "content": "x"})
        assert escaped.is_error and not (tmp_path / "x.txt").exists()

    def test_bad_arguments_are_refused(self, tmp_path: Path) -> None:
        with pytest.raises(UserError, match="max_read_chars must be a positive integer"):
            fs_read_file_tool(tmp_path, max_read_chars=0)
        with pytest.raises(UserError, match="grep_timeout must be a positive number"):
            fs_grep_tool(tmp_path, grep_timeout=-1)
        with pytest.raises(UserError):
            fs_write_file_tool(tmp_path / "missing")

    async def test_equal_sets_share_their_file_locks(self, tmp_path: Path) -> None:
        (tmp_path / "alias").symlink_to(tmp_path, target_is_directory=True)
        path = tmp_path / "list.txt"
        path.write_text("".join(f"item {n}: todo\n" for n in range(30)))
        clients = [
            LocalToolClient(filesystem_tools(root)) for root in (tmp_path, tmp_path / "alias")
        ]
        # An edit waits while another workspace of the root holds the file's lock.
        with Workspace(tmp_path).locked(path.resolve()):
            blocked = asyncio.ensure_future(
                clients[0].call_tool(
                    "fs-edit-file", {"path": "list.txt", "old_text": "item 0:", "new_text": "0:"}
                )
            )
            done, _ = await asyncio.wait([blocked], timeout=0.2)
            assert not done
        assert not (await blocked).is_error
        replies = await asyncio.gather(
            *(
                clients[n % 2].call_tool(
                    "fs-edit-file",
                    {
                        "path": "list.txt",
                        "old_text": f"item {n}: todo",
                        "new_text": f"item {n}: done",
                    },
                )
                for n in range(1, 30)
            )
        )
        assert not any(r.is_error for r in replies)
        assert path.read_text() == "0: todo\n" + "".join(f"item {n}: done\n" for n in range(1, 30))


class TestConfinement:
    def escapes(self, bench: Workbench) -> list[str]:
        secret = bench.outside / "secret.txt"
        return ["../outside/secret.txt", str(secret), "sub/../../outside/secret.txt"]

    @pytest.mark.parametrize("name", PATH_TOOLS)
    async def test_traversal_and_absolute_paths_outside_are_refused(
        self, bench: Workbench, name: str
    ) -> None:
        (bench.root / "sub").mkdir()
        for path in self.escapes(bench):
            error = await bench.fail(name, path=path, **EXTRA[name])
            assert f"path {path!r} is outside the root directory" in error
        assert (bench.outside / "secret.txt").read_text() == "top secret\n"
        assert sorted(p.name for p in bench.outside.iterdir()) == ["secret.txt"]

    @pytest.mark.parametrize("name", PATH_TOOLS)
    async def test_a_symlinked_file_leading_out_is_refused(
        self, bench: Workbench, name: str
    ) -> None:
        (bench.root / "leak.txt").symlink_to(bench.outside / "secret.txt")
        error = await bench.fail(name, path="leak.txt", **EXTRA[name])
        assert "path 'leak.txt' leads outside the root directory through a symbolic link" in error
        assert (bench.outside / "secret.txt").read_text() == "top secret\n"
        assert (bench.root / "leak.txt").is_symlink()

    @pytest.mark.parametrize("name", PATH_TOOLS)
    async def test_a_symlinked_folder_leading_out_is_refused(
        self, bench: Workbench, name: str
    ) -> None:
        (bench.root / "door").symlink_to(bench.outside, target_is_directory=True)
        for path in ["door", "door/secret.txt", "door/new.txt"]:
            error = await bench.fail(name, path=path, **EXTRA[name])
            assert f"path {path!r} leads outside the root directory" in error
        assert sorted(p.name for p in bench.outside.iterdir()) == ["secret.txt"]
        assert (bench.outside / "secret.txt").read_text() == "top secret\n"

    async def test_a_dangling_symlink_leading_out_is_not_written_through(
        self, bench: Workbench
    ) -> None:
        (bench.root / "trap.txt").symlink_to(bench.outside / "planted.txt")
        error = await bench.fail("fs-write-file", path="trap.txt", content="x")
        assert "'trap.txt' leads outside the root directory" in error
        assert not (bench.outside / "planted.txt").exists()

    async def test_paths_inside_the_root_may_be_absolute_or_wander(self, bench: Workbench) -> None:
        bench.write("docs/a.txt", "alpha\n")
        assert await bench.ok("fs-read-file", path=str(bench.root / "docs" / "a.txt")) == "alpha\n"
        assert await bench.ok("fs-read-file", path="docs/../docs/./a.txt") == "alpha\n"
        written = await bench.ok("fs-write-file", path=str(bench.root / "b.txt"), content="b")
        assert written == "created b.txt (1 byte)"

    async def test_symlinks_inside_the_root_are_followed(self, bench: Workbench) -> None:
        bench.write("real/notes.txt", "old\n")
        (bench.root / "alias.txt").symlink_to(bench.root / "real" / "notes.txt")
        assert await bench.ok("fs-read-file", path="alias.txt") == "old\n"
        assert await bench.ok("fs-write-file", path="alias.txt", content="new\n") == (
            "replaced real/notes.txt (4 bytes)"
        )
        assert (bench.root / "alias.txt").is_symlink()  # the link stays a link
        assert (bench.root / "real" / "notes.txt").read_text() == "new\n"

    async def test_the_root_is_resolved_when_the_tools_are_made(self, tmp_path: Path) -> None:
        first, second = tmp_path / "first", tmp_path / "second"
        first.mkdir()
        second.mkdir()
        (first / "which.txt").write_text("first\n")
        (second / "which.txt").write_text("second\n")
        link = tmp_path / "current"
        link.symlink_to(first, target_is_directory=True)
        bench_tools = {t.name: t for t in filesystem_tools(link)}
        link.unlink()
        link.symlink_to(second, target_is_directory=True)
        from heron.tools import LocalToolClient

        result = await LocalToolClient(bench_tools.values()).call_tool(
            "fs-read-file", {"path": "which.txt"}
        )
        assert result.text == "first\n"

    def test_a_missing_or_unusable_root_is_a_user_error(self, tmp_path: Path) -> None:
        with pytest.raises(UserError, match="does not exist"):
            filesystem_tools(tmp_path / "nowhere")
        (tmp_path / "file").write_text("")
        with pytest.raises(UserError, match="is not a directory"):
            filesystem_tools(tmp_path / "file")
        with pytest.raises(UserError, match="max_read_chars must be a positive integer"):
            filesystem_tools(tmp_path, max_read_chars=0)

    def test_a_folder_swapped_for_a_link_after_the_check_is_not_followed(
        self, bench: Workbench
    ) -> None:
        workspace = Workspace(bench.root)
        bench.write("sub/f.txt", "inside\n")
        (bench.outside / "f.txt").write_text("outside\n")
        existing, new = workspace.resolve("sub/f.txt"), workspace.resolve("sub/new.txt")
        # A process racing the tools swaps the folder once the paths were checked.
        (bench.root / "sub").rename(bench.root / "moved")
        (bench.root / "sub").symlink_to(bench.outside, target_is_directory=True)
        with pytest.raises(ToolError, match=r"'sub/f\.txt': the path changed while in use"):
            workspace.read_bytes(existing, "sub/f.txt")
        with pytest.raises(ToolError, match=r"'sub/new\.txt': the path changed while in use"):
            workspace.write_bytes(new, "sub/new.txt", b"planted")
        assert sorted(p.name for p in bench.outside.iterdir()) == ["f.txt", "secret.txt"]

    def test_a_search_does_not_follow_a_folder_swapped_during_the_walk(
        self, bench: Workbench
    ) -> None:
        workspace = Workspace(bench.root)
        found = bench.write("sub/secret.txt", "inside\n")
        with workspace.open_found(str(found)) as handle:
            assert handle.read() == b"inside\n"
        (bench.root / "sub").rename(bench.root / "moved")
        (bench.root / "sub").symlink_to(bench.outside, target_is_directory=True)
        with pytest.raises(OSError, match="outside the root directory"):
            workspace.open_found(str(found))

    def test_a_file_swapped_for_a_link_after_the_check_is_not_followed(
        self, bench: Workbench
    ) -> None:
        workspace = Workspace(bench.root)
        bench.write("a.txt", "inside\n")
        real = workspace.resolve("a.txt")
        (bench.root / "a.txt").unlink()
        (bench.root / "a.txt").symlink_to(bench.outside / "secret.txt")
        with pytest.raises(ToolError, match="the path changed while in use"):
            workspace.read_bytes(real, "a.txt")
        with pytest.raises(ToolError, match="the path changed while in use"):
            workspace.write_bytes(real, "a.txt", b"planted\n")
        assert (bench.outside / "secret.txt").read_text() == "top secret\n"
        assert (bench.root / "a.txt").is_symlink()

    async def test_a_link_loop_is_refused_and_left_alone(self, bench: Workbench) -> None:
        (bench.root / "one").symlink_to(bench.root / "two")
        (bench.root / "two").symlink_to(bench.root / "one")
        for name, extra in [("fs-read-file", {}), ("fs-write-file", {"content": "x"})]:
            error = await bench.fail(name, path="one", **extra)
            assert "'one'" in error and "link loop" in error
        assert (bench.root / "one").is_symlink() and (bench.root / "two").is_symlink()

    async def test_nul_bytes_in_a_path_are_refused(self, bench: Workbench) -> None:
        assert "contains a NUL byte" in await bench.fail("fs-read-file", path="a\0b")


class TestRead:
    async def test_reads_text_exactly(self, bench: Workbench) -> None:
        text = "héron ✓\r\nsecond line\n\nlast without newline"
        bench.write("a.txt", text)
        assert await bench.ok("fs-read-file", path="a.txt") == text + "\n"

    async def test_line_ranges(self, bench: Workbench) -> None:
        bench.write("five.txt", "".join(f"line {n}\n" for n in range(1, 6)))
        assert await bench.ok("fs-read-file", path="five.txt", start_line=2, end_line=3) == (
            "line 2\nline 3\n[lines 2-3 of 5]"
        )
        assert await bench.ok("fs-read-file", path="five.txt", start_line=4) == (
            "line 4\nline 5\n[lines 4-5 of 5]"
        )
        assert await bench.ok("fs-read-file", path="five.txt", end_line=99) == (
            "".join(f"line {n}\n" for n in range(1, 6))
        )

    async def test_bad_ranges_are_explained(self, bench: Workbench) -> None:
        bench.write("five.txt", "".join(f"line {n}\n" for n in range(1, 6)))
        past = await bench.fail("fs-read-file", path="five.txt", start_line=9)
        assert past == "start_line 9 is past the end of five.txt (5 lines)"
        backwards = await bench.fail("fs-read-file", path="five.txt", start_line=4, end_line=2)
        assert backwards == "end_line 2 is before start_line 4"
        zero = await bench.fail("fs-read-file", path="five.txt", start_line=0)
        assert "start_line" in zero

    async def test_long_files_come_in_parts_that_rebuild_the_file(self, tmp_path: Path) -> None:
        bench = Workbench(tmp_path, max_read_chars=100)
        text = "".join(f"{n:03d} {'x' * (n % 17)}\n" for n in range(1, 201))
        bench.write("long.txt", text)
        pieces, start, reads = [], 1, 0
        while True:
            reply = await bench.ok("fs-read-file", path="long.txt", start_line=start)
            reads += 1
            body, _, marker = reply.rpartition("\n[")
            pieces.append(body + "\n")
            if not marker.startswith("truncated"):
                break
            assert "of 200 shown (100 characters at most per read)" in marker
            assert len(body) <= 100
            start = int(marker.split("start_line=")[1].rstrip("]"))
        assert "".join(pieces) == text
        assert reads > 20

    async def test_a_line_longer_than_the_limit_is_cut_and_says_so(self, tmp_path: Path) -> None:
        bench = Workbench(tmp_path, max_read_chars=50)
        bench.write("wide.txt", "w" * 500 + "\nshort\n")
        reply = await bench.ok("fs-read-file", path="wide.txt")
        assert reply == "w" * 50 + (
            "\n[line 1 has 500 characters, more than one read of 50: characters 1-50 shown; "
            "read on with start_line=1, skip_chars=50, or the next line with start_line=2]"
        )
        assert await bench.ok("fs-read-file", path="wide.txt", start_line=2) == (
            "short\n[lines 2-2 of 2]"
        )

    async def test_a_file_of_one_long_line_reads_to_its_end_in_parts(self, tmp_path: Path) -> None:
        bench = Workbench(tmp_path, max_read_chars=100)
        line = "".join(f"{n:04d}," for n in range(200))  # 1,000 characters, no newline
        bench.write("minified.js", line)
        pieces, skip = [], 0
        for _ in range(20):
            reply = await bench.ok("fs-read-file", path="minified.js", skip_chars=skip)
            if "skip_chars=" not in reply:  # the last part, whole
                pieces.append(reply.removesuffix("\n"))
                break
            body, _, marker = reply.rpartition("\n[")
            assert "next line" not in marker  # there is none
            pieces.append(body)
            skip = int(marker.split("skip_chars=")[1].rstrip("]"))
        assert "".join(pieces) == line
        assert len(pieces) == 10
        error = await bench.fail("fs-read-file", path="minified.js", skip_chars=1000)
        assert error == "skip_chars 1000 is past the end of line 1 of minified.js (1000 characters)"

    async def test_binary_files_are_refused(self, bench: Workbench) -> None:
        bench.write("image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
        error = await bench.fail("fs-read-file", path="image.png")
        assert error == "'image.png' is a binary file, not text; it cannot be read as text"

    async def test_text_that_is_not_utf8_is_refused_with_its_line(self, bench: Workbench) -> None:
        # Latin-1 past the first 8 KB: the sniff passes, the line decode does not.
        bench.write("latin.txt", b"ok\n" * 4000 + "caf\xe9\n".encode("latin-1"))
        error = await bench.fail("fs-read-file", path="latin.txt")
        assert error == "'latin.txt' is not UTF-8 text (line 4001)"

    async def test_folders_missing_files_pipes_and_empty_files(self, bench: Workbench) -> None:
        (bench.root / "dir").mkdir()
        assert "is a directory" in await bench.fail("fs-read-file", path="dir")
        assert await bench.fail("fs-read-file", path="nope.txt") == "no such file: 'nope.txt'"
        os.mkfifo(bench.root / "pipe")
        assert await bench.fail("fs-read-file", path="pipe") == "'pipe' is not a regular file"
        bench.write("empty.txt", "")
        assert await bench.ok("fs-read-file", path="empty.txt") == "[empty.txt is empty]"


class TestWrite:
    async def test_creates_the_file_and_its_folders(self, bench: Workbench) -> None:
        reply = await bench.ok("fs-write-file", path="a/b/c.txt", content="héron\n")
        assert reply == "created a/b/c.txt (7 bytes)"
        assert (bench.root / "a" / "b" / "c.txt").read_text() == "héron\n"

    async def test_replaces_a_file_keeping_its_mode(self, bench: Workbench) -> None:
        path = bench.write("run.sh", "old")
        path.chmod(0o750)
        reply = await bench.ok("fs-write-file", path="run.sh", content="#!/bin/sh\n")
        assert reply == "replaced run.sh (10 bytes)"
        assert path.read_text() == "#!/bin/sh\n"
        assert path.stat().st_mode & 0o7777 == 0o750

    async def test_a_new_file_gets_the_umask_mode(self, bench: Workbench) -> None:
        old = os.umask(0o027)
        try:
            await bench.ok("fs-write-file", path="new.txt", content="x")
        finally:
            os.umask(old)
        assert (bench.root / "new.txt").stat().st_mode & 0o777 == 0o640

    async def test_refusals_leave_everything_as_it_was(self, bench: Workbench) -> None:
        (bench.root / "dir").mkdir()
        assert "is a directory" in await bench.fail("fs-write-file", path="dir", content="x")
        bench.write("plain", "keep")
        error = await bench.fail("fs-write-file", path="plain/child.txt", content="x")
        assert "cannot write 'plain/child.txt'" in error
        bench.write("keep.txt", "keep")
        error = await bench.fail("fs-write-file", path="keep.txt", content="bad \ud800 text")
        assert "unpaired surrogate at character 4" in error
        assert (bench.root / "keep.txt").read_text() == "keep"
        assert (bench.root / "plain").read_text() == "keep"

    async def test_readers_never_see_a_partial_file(self, bench: Workbench) -> None:
        size = 4 * 1024 * 1024
        versions = [b"A" * size, b"B" * size]
        path = bench.write("big.bin.txt", versions[0])
        done = threading.Event()
        seen: list[bytes] = []

        def reader() -> None:
            while not done.is_set():
                data = path.read_bytes()
                if data not in versions:
                    seen.append(data[:20] + f"...({len(data)} bytes)".encode())

        thread = threading.Thread(target=reader)
        thread.start()
        try:
            for n in range(6):
                content = versions[(n + 1) % 2].decode()
                await bench.ok("fs-write-file", path="big.bin.txt", content=content)
        finally:
            done.set()
            thread.join()
        assert seen == []
        assert [p.name for p in bench.root.iterdir()] == ["big.bin.txt"]  # no temp files left

    def test_a_failed_write_keeps_the_original_and_no_temp_file(self, bench: Workbench) -> None:
        bench.write("precious.txt", "original\n")
        # A real mid-write failure: the child may write at most 64 KB per file.
        script = f"""
import asyncio, json, resource, signal
from heron.tools import (
    LocalToolClient,
    Skill,
    filesystem_tools,
    fs_edit_file_tool,
    fs_glob_tool,
    fs_grep_tool,
    fs_list_directory_tool,
    fs_read_file_tool,
    fs_write_file_tool,
    merge_tools,
)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
client = LocalToolClient(filesystem_tools({str(bench.root)!r}))
result = asyncio.run(
    client.call_tool("fs-write-file", {{"path": "precious.txt", "content": "x" * 1_000_000}})
)
print(json.dumps({{"error": result.is_error, "text": result.text}}))
"""
        child = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
        )
        outcome = json.loads(child.stdout)
        assert outcome["error"] is True
        assert outcome["text"].startswith("cannot write 'precious.txt': File too large")
        assert (bench.root / "precious.txt").read_text() == "original\n"
        assert [p.name for p in bench.root.iterdir()] == ["precious.txt"]


class TestEdit:
    async def test_replaces_one_exact_occurrence(self, bench: Workbench) -> None:
        path = bench.write("app.py", "def main():\r\n    return 1\r\n\r\nprint(main())\r\n")
        path.chmod(0o700)
        reply = await bench.ok(
            "fs-edit-file", path="app.py", old_text="return 1", new_text="return 2"
        )
        assert reply == "edited app.py: replaced 1 occurrence at line 2"
        assert path.read_bytes() == b"def main():\r\n    return 2\r\n\r\nprint(main())\r\n"
        assert path.stat().st_mode & 0o777 == 0o700

    async def test_absent_text_fails_clearly_and_changes_nothing(self, bench: Workbench) -> None:
        path = bench.write("app.py", "def main():\n    return 1\n")
        error = await bench.fail("fs-edit-file", path="app.py", old_text="return 9", new_text="")
        assert error.startswith("old_text was not found in app.py; read the file again")
        spaced = await bench.fail(
            "fs-edit-file", path="app.py", old_text="def main():\n  return 1", new_text="x"
        )
        assert "the same words are there with different spacing" in spaced
        assert path.read_text() == "def main():\n    return 1\n"

    async def test_lines_given_without_carriage_returns_edit_a_crlf_file(
        self, bench: Workbench
    ) -> None:
        path = bench.write("win.py", "def main():\r\n    return 1\r\n\r\nprint(main())\r\n")
        reply = await bench.ok(
            "fs-edit-file",
            path="win.py",
            old_text="def main():\n    return 1\n",
            new_text="def main():\n    x = 2\n    return x\n",
        )
        assert reply == "edited win.py: replaced 1 occurrence at line 1"
        assert path.read_bytes() == (
            b"def main():\r\n    x = 2\r\n    return x\r\n\r\nprint(main())\r\n"
        )

    async def test_ambiguous_text_fails_with_the_count_and_lines(self, bench: Workbench) -> None:
        path = bench.write("x.txt", "a = 1\nb = 2\na = 1\n\na = 1\n")
        error = await bench.fail("fs-edit-file", path="x.txt", old_text="a = 1", new_text="a = 0")
        assert error.startswith("old_text occurs 3 times in x.txt (at lines 1, 3, 5)")
        assert "replace_all" in error
        assert path.read_text() == "a = 1\nb = 2\na = 1\n\na = 1\n"
        reply = await bench.ok(
            "fs-edit-file", path="x.txt", old_text="a = 1", new_text="a = 0", replace_all=True
        )
        assert reply == "edited x.txt: replaced 3 occurrences at lines 1, 3, 5"
        assert path.read_text() == "a = 0\nb = 2\na = 0\n\na = 0\n"

    async def test_pointless_and_impossible_edits(self, bench: Workbench) -> None:
        bench.write("x.txt", "same\n")
        same = await bench.fail("fs-edit-file", path="x.txt", old_text="same", new_text="same")
        assert "nothing would change" in same
        empty = await bench.fail("fs-edit-file", path="x.txt", old_text="", new_text="y")
        assert "old_text" in empty
        bench.write("blob.bin", b"\x00\x01same")
        binary = await bench.fail("fs-edit-file", path="blob.bin", old_text="same", new_text="x")
        assert binary == "'blob.bin' is a binary file, not text"
        missing = await bench.fail("fs-edit-file", path="no.txt", old_text="a", new_text="b")
        assert missing == "no such file: 'no.txt'"

    async def test_parallel_edits_of_one_file_all_land(self, bench: Workbench) -> None:
        path = bench.write("list.txt", "".join(f"item {n}: todo\n" for n in range(30)))
        replies = await asyncio.gather(
            *(
                bench.call(
                    "fs-edit-file",
                    path="list.txt",
                    old_text=f"item {n}: todo",
                    new_text=f"item {n}: done",
                )
                for n in range(30)
            )
        )
        assert not any(r.is_error for r in replies)
        assert path.read_text() == "".join(f"item {n}: done\n" for n in range(30))


async def test_hidden_paths_inside_the_root_are_as_good_as_absent(tmp_path: Path) -> None:
    """What the daemon does for ``$HERON_HOME`` in a node's directory: named, listed,
    globbed, grepped or reached through a link, the hidden folder yields nothing."""
    root = tmp_path / "root"
    private = root / ".heron"
    private.mkdir(parents=True)
    (private / "credentials.json").write_text('{"api_key": "sk-hidden-marker"}')
    (root / "notes.txt").write_text("sk-hidden-marker is not here\n")
    (root / "link").symlink_to(private, target_is_directory=True)
    client = LocalToolClient(filesystem_tools(root, hidden=[private]))

    async def call(name: str, **arguments: object) -> tuple[bool, str]:
        result = await client.call_tool(name, arguments)
        return result.is_error, result.text

    for path in (".heron/credentials.json", "link/credentials.json", str(private / "x")):
        failed, text = await call("fs-read-file", path=path)
        assert failed and "not available to these tools" in text, text
    failed, text = await call("fs-write-file", path=".heron/planted.txt", content="x")
    assert failed and not (private / "planted.txt").exists()
    for name, arguments in [
        ("fs-list-directory", {"depth": 3}),
        ("fs-glob", {"pattern": "**/*"}),
        ("fs-grep", {"pattern": "sk-hidden-marker"}),
    ]:
        failed, text = await call(name, **arguments)
        assert not failed and ".heron" not in text and "credentials" not in text, text
    assert "notes.txt" in (await call("fs-grep", pattern="sk-hidden-marker"))[1]
    with pytest.raises(UserError, match="a list of paths"):
        filesystem_tools(root, hidden=str(private))  # type: ignore[arg-type]
