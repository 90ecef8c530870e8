"""Listing, glob and grep on real directories: order, limits, skipped files, confinement."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from heron import UserError
from heron.tools import filesystem_tools
from heron.tools._fs_search import compile_glob

from .fs_helpers import Workbench


@pytest.fixture
def bench(tmp_path: Path) -> Workbench:
    bench = Workbench(tmp_path)
    bench.write("README.md", "# Demo\nTODO: write docs\n")
    bench.write("setup.py", "print('setup')\n")
    bench.write("src/app/main.py", "import os\n\ndef main():\n    # todo: tidy\n    pass\n")
    bench.write("src/app/view.ts", "export const TODO = 1;\n")
    bench.write("src/app/view.tsx", "<div/>\n")
    bench.write("src/.env", "TOKEN=abc\n")
    bench.write("node_modules/lib/index.js", "// TODO upstream\n")
    bench.write("data/blob.bin", b"\x00\x01TODO\x02")
    (bench.root / "empty").mkdir()
    (bench.root / "leak.txt").symlink_to(bench.outside / "secret.txt")
    (bench.root / "door").symlink_to(bench.outside, target_is_directory=True)
    (bench.root / "readme-link").symlink_to(bench.root / "README.md")
    return bench


class TestList:
    async def test_one_level_with_types_and_sizes(self, bench: Workbench) -> None:
        assert await bench.ok("fs-list-directory") == "\n".join(
            [
                "README.md (file, 24 bytes)",
                "data/ (folder)",
                "empty/ (folder)",
                "node_modules/ (folder)",
                "readme-link (symlink to file README.md)",
                "setup.py (file, 15 bytes)",
                "src/ (folder)",
            ]
        )

    async def test_deeper_levels_skip_dependency_folders(self, bench: Workbench) -> None:
        listing = await bench.ok("fs-list-directory", path="src", depth=2)
        assert listing.splitlines() == [
            "src/.env (file, 10 bytes)",
            "src/app/ (folder)",
            "src/app/main.py (file, 49 bytes)",
            "src/app/view.ts (file, 23 bytes)",
            "src/app/view.tsx (file, 7 bytes)",
        ]
        whole = await bench.ok("fs-list-directory", depth=3)
        assert "node_modules/ (folder, not expanded)" in whole
        assert "index.js" not in whole

    async def test_links_leading_out_are_not_shown(self, bench: Workbench) -> None:
        listing = await bench.ok("fs-list-directory", depth=5)
        assert "leak" not in listing and "door" not in listing and "secret" not in listing

    async def test_the_listing_stops_at_its_limit_and_says_so(self, tmp_path: Path) -> None:
        bench = Workbench(tmp_path, max_entries=3)
        for n in range(10):
            bench.write(f"f{n}.txt", "")
        assert (await bench.ok("fs-list-directory")).splitlines() == [
            "f0.txt (file, 0 bytes)",
            "f1.txt (file, 0 bytes)",
            "f2.txt (file, 0 bytes)",
            "[listing stopped at 3 entries: list a subfolder or use a smaller depth "
            "to see the rest]",
        ]

    async def test_files_missing_folders_and_empty_folders(self, bench: Workbench) -> None:
        assert "is a file, not a folder" in await bench.fail("fs-list-directory", path="setup.py")
        assert await bench.fail("fs-list-directory", path="gone") == "no such folder: 'gone'"
        assert await bench.ok("fs-list-directory", path="empty") == "[empty is an empty folder]"
        too_deep = await bench.fail("fs-list-directory", depth=11)
        assert "depth" in too_deep


class TestGlob:
    @pytest.mark.parametrize(
        ("pattern", "expected"),
        [
            ("**/*.py", ["setup.py", "src/app/main.py"]),
            ("*.py", ["setup.py"]),
            ("src/*/view.{ts,tsx}", ["src/app/view.ts", "src/app/view.tsx"]),
            ("src/app/view.t?", ["src/app/view.ts"]),
            ("src/app/[mv]*.py", ["src/app/main.py"]),
            ("src/app/[!m]*", ["src/app/view.ts", "src/app/view.tsx"]),
            ("src/**", ["src/app/", "src/app/main.py", "src/app/view.ts", "src/app/view.tsx"]),
            ("src/*", ["src/app/"]),
            ("src/.*", ["src/.env"]),
            ("**/.env", ["src/.env"]),
            ("node_modules/**/*.js", ["node_modules/lib/index.js"]),
            ("./README.md", ["README.md"]),
            ("src/**/**/**/**/**/**/**/**/**/**/*.py", ["src/app/main.py"]),
        ],
    )
    async def test_patterns(self, bench: Workbench, pattern: str, expected: list[str]) -> None:
        assert (await bench.ok("fs-glob", pattern=pattern)).splitlines() == expected

    async def test_dependency_folders_and_links_out_are_not_entered(self, bench: Workbench) -> None:
        everything = (await bench.ok("fs-glob", pattern="**")).splitlines()
        assert "node_modules/" in everything
        assert not [p for p in everything if p.startswith("node_modules/l")]
        assert "readme-link" in everything
        assert not [p for p in everything if "leak" in p or "door" in p]

    async def test_no_match_and_bad_patterns(self, bench: Workbench) -> None:
        assert await bench.ok("fs-glob", pattern="**/*.rs") == "[no paths match '**/*.rs']"
        for pattern in ["../outside/*", "src/../../*"]:
            assert "may not contain '..'" in await bench.fail("fs-glob", pattern=pattern)
        absolute = await bench.fail("fs-glob", pattern=str(bench.outside / "*"))
        assert "must be relative to the root directory" in absolute
        assert "empty" in await bench.fail("fs-glob", pattern="  ")
        through = await bench.fail("fs-glob", pattern="door/*")
        assert through == "path 'door' leads outside the root directory through a symbolic link"

    def test_repeated_double_stars_cost_what_one_does(self) -> None:
        # Each unmerged ** would multiply the ways a long path can match.
        assert compile_glob("a/**/**/**/**/**/**/**/**/b/*.py").pattern == (
            compile_glob("a/**/b/*.py").pattern
        )
        assert compile_glob("**/**").pattern == compile_glob("**").pattern

    async def test_a_linked_folder_named_in_the_pattern_is_followed(self, bench: Workbench) -> None:
        (bench.root / "inlink").symlink_to(bench.root / "src" / "app", target_is_directory=True)
        assert (await bench.ok("fs-glob", pattern="inlink/*.py")).splitlines() == ["inlink/main.py"]
        assert (await bench.ok("fs-glob", pattern="inlink/**/view.*")).splitlines() == [
            "inlink/view.ts",
            "inlink/view.tsx",
        ]
        # Found names read back as they are shown.
        assert "def main" in await bench.ok("fs-read-file", path="inlink/main.py")

    async def test_results_stop_at_the_limit(self, tmp_path: Path) -> None:
        bench = Workbench(tmp_path, max_entries=2)
        for name in "abcde":
            bench.write(f"{name}.txt", "")
        assert (await bench.ok("fs-glob", pattern="*.txt")).splitlines() == [
            "a.txt",
            "b.txt",
            "[stopped at 2 paths: use a narrower pattern to see the rest]",
        ]


class TestGrep:
    async def test_regex_matches_as_path_line_text(self, bench: Workbench) -> None:
        reply = await bench.ok("fs-grep", pattern=r"TODO\b")
        assert reply.splitlines() == [
            "README.md:2:TODO: write docs",
            "src/app/view.ts:1:export const TODO = 1;",
            "[skipped 1 binary file: data/blob.bin]",
        ]

    async def test_literal_case_glob_and_path(self, bench: Workbench) -> None:
        assert (await bench.ok("fs-grep", pattern="print('", literal=True, glob="*.py")) == (
            "setup.py:1:print('setup')"
        )
        assert (await bench.ok("fs-grep", pattern="todo", ignore_case=True, glob="*.py")) == (
            "src/app/main.py:4:    # todo: tidy"
        )
        assert (await bench.ok("fs-grep", pattern="TODO", glob="src/**/*.ts")) == (
            "src/app/view.ts:1:export const TODO = 1;"
        )
        assert (await bench.ok("fs-grep", pattern="def", path="src/app/main.py")) == (
            "src/app/main.py:3:def main():"
        )

    async def test_dependency_folders_and_links_out_are_not_searched(
        self, bench: Workbench
    ) -> None:
        reply = await bench.ok("fs-grep", pattern="secret|upstream")
        assert reply.startswith("[no matches for 'secret|upstream' in 6 files under .]")
        # The link to README.md inside the root is not searched twice.
        assert (await bench.ok("fs-grep", pattern="Demo")) == "README.md:1:# Demo\n" + (
            "[skipped 1 binary file: data/blob.bin]"
        )

    @pytest.mark.parametrize(
        ("pattern", "expected"),
        [
            (r"^def \w+\(\):$", ["src/app/main.py:3:def main():"]),
            (r"\Aimport", ["src/app/main.py:1:import os"]),  # \A: each line's start
            (r"tidy(?!\s)", ["src/app/main.py:4:    # todo: tidy"]),  # nothing after the line
            (r"os\n", []),  # a line holds no line break
        ],
    )
    async def test_patterns_apply_to_each_line(
        self, bench: Workbench, pattern: str, expected: list[str]
    ) -> None:
        reply = await bench.ok("fs-grep", pattern=pattern, glob="*.py")
        assert [line for line in reply.splitlines() if not line.startswith("[")] == expected

    async def test_crlf_lines_match_and_show_without_the_carriage_return(
        self, bench: Workbench
    ) -> None:
        bench.write("dos.txt", "first\r\nsecond line\r\n")
        assert await bench.ok("fs-grep", pattern="second", path="dos.txt") == (
            "dos.txt:2:second line"
        )

    async def test_matches_stop_at_the_limit(self, tmp_path: Path) -> None:
        bench = Workbench(tmp_path, max_matches=3)
        bench.write("many.txt", "hit\n" * 10)
        assert (await bench.ok("fs-grep", pattern="hit")).splitlines() == [
            "many.txt:1:hit",
            "many.txt:2:hit",
            "many.txt:3:hit",
            "[stopped at 3 matches: narrow the pattern, path or glob to see the rest]",
        ]

    async def test_long_lines_are_cut_around_the_match(self, bench: Workbench) -> None:
        bench.write("wide.txt", "needle" + "x" * 1000 + "\n" + "y" * 5000 + "pin" + "z" * 5000)
        reply = await bench.ok("fs-grep", pattern="needle|pin", path="wide.txt")
        first, second = reply.splitlines()
        assert first == "wide.txt:1:needle" + "x" * 394 + (
            " [line cut: characters 1-400 of 1006 shown; "
            "fs-read-file with skip_chars reads the rest]"
        )
        assert second == "wide.txt:2:" + "y" * 100 + "pin" + "z" * 297 + (
            " [line cut: characters 4901-5300 of 10003 shown; "
            "fs-read-file with skip_chars reads the rest]"
        )

    async def test_a_pattern_that_backtracks_forever_is_stopped(self, tmp_path: Path) -> None:
        bench = Workbench(tmp_path, grep_timeout=0.5)
        bench.write("a.txt", "a" * 40 + "\n")
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        try:
            error = await asyncio.wait_for(bench.fail("fs-grep", pattern="(a|aa)+b"), 30)
        finally:
            ticker.cancel()
        assert error.startswith(
            "pattern '(a|aa)+b' took more than 0.5 s to match (in a.txt) and was stopped"
        )
        assert "set literal" in error
        assert ticks >= 5  # the process went on meanwhile: matching let go of the GIL

    async def test_matches_found_before_the_time_ran_out_are_kept(self, tmp_path: Path) -> None:
        bench = Workbench(tmp_path, grep_timeout=0.5)
        bench.write("a.txt", "hit\n")
        bench.write("b.txt", "a" * 40 + "\n")
        reply = await bench.ok("fs-grep", pattern="hit|(a|aa)+b")
        assert reply.splitlines() == [
            "a.txt:1:hit",
            "[stopped after 0.5 s while searching b.txt: the pattern is slow to match; "
            "simplify it or narrow the path or glob]",
        ]

    def test_the_time_limit_must_be_positive(self, tmp_path: Path) -> None:
        for bad in [0, -1.0, float("nan"), True, "5"]:
            with pytest.raises(UserError, match="grep_timeout must be a positive number"):
                filesystem_tools(tmp_path, grep_timeout=bad)  # type: ignore[arg-type]

    async def test_errors(self, bench: Workbench) -> None:
        invalid = await bench.fail("fs-grep", pattern="(unclosed")
        assert invalid.startswith("pattern '(unclosed' is not a valid regular expression")
        assert "set literal" in invalid
        assert await bench.fail("fs-grep", pattern="x", path="gone") == (
            "no such file or folder: 'gone'"
        )
        assert "outside the root" in await bench.fail("fs-grep", pattern="x", path="..")
