"""The present tools on real directory trees: what is handed back, what is left out."""

import contextlib
import os
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heron import SimpleAgent, ToolResult, UserError
from heron.testing import ScriptedProvider
from heron.tools import LocalToolClient, present_tools


def write(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small project with the usual clutter around its sources."""
    root = tmp_path / "shop"
    write(root / "README.md", "# Shop\n")
    write(root / "app" / "main.py", "print('hello')\n" * 10)
    write(root / "app" / "util.py", "")
    write(root / "web" / "index.html", "<h1>shop</h1>")
    clutter = [
        "app/__pycache__/main.cpython-311.pyc",
        "app/stale.pyc",
        ".venv/lib/site.py",
        "node_modules/react/index.js",
        "web/node_modules/vue/index.js",
        ".git/HEAD",
        ".pytest_cache/v/cache",
        ".mypy_cache/3.11/x.json",
        "dist/shop-1.0.tar.gz",
        "build/lib/app.py",
        "shop.egg-info/PKG-INFO",
        ".DS_Store",
        ".env",
        "myenv/bin/python",
    ]
    for name in clutter:
        write(root / name)
    write(root / "myenv" / "pyvenv.cfg", "home = /usr/bin")  # a venv under any name
    write(root / "target" / "CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55")
    return root.resolve()


def leftovers(root: Path) -> list[Path]:
    """Temporary files a zip being written would leave behind."""
    return list(root.rglob(".present-*"))


class Present:
    def __init__(self, root: Path) -> None:
        self.client = LocalToolClient(present_tools(root))

    async def __call__(self, name: str, /, **arguments: Any) -> ToolResult:
        return await self.client.call_tool(f"present-{name}", arguments)

    async def ok(self, name: str, /, **arguments: Any) -> ToolResult:
        result = await self(name, **arguments)
        assert not result.is_error, result.text
        return result


SOURCES = ["README.md", "app/main.py", "app/util.py", "web/index.html"]


async def test_files_lists_sources_with_sizes_and_leaves_artifacts_out(project: Path) -> None:
    result = await Present(project).ok("files")
    files = result.structured["files"]
    assert [f["path"] for f in files] == SOURCES
    assert {f["path"]: f["size"] for f in files} == {
        name: (project / name).stat().st_size for name in SOURCES
    }
    assert result.structured["total_size"] == sum(f["size"] for f in files)
    assert result.structured["root"] == str(project)
    skipped = {s["path"] for s in result.structured["skipped"]}
    assert skipped >= {
        "app/__pycache__/",
        "app/stale.pyc",
        ".venv/",
        "node_modules/",
        "web/node_modules/",
        ".git/",
        "dist/",
        "build/",
        "shop.egg-info/",
        ".env",
        "myenv/",
        "target/",
    }
    lines = result.text.splitlines()
    assert lines[0] == f"Presenting 4 files (170 B) under {project}:"
    assert "  app/main.py  (150 B)" in lines
    assert "Left out:" in lines
    assert "  myenv/ (virtual environment)" in lines


async def test_named_paths_only_and_named_artifacts_are_taken(project: Path) -> None:
    result = await Present(project).ok("files", paths=["web", "dist", "app/stale.pyc"])
    assert [f["path"] for f in result.structured["files"]] == [
        "app/stale.pyc",
        "dist/shop-1.0.tar.gz",
        "web/index.html",
    ]


async def test_a_file_named_twice_is_listed_once(project: Path) -> None:
    result = await Present(project).ok("files", paths=["app", "app/main.py", "./app/main.py"])
    assert [f["path"] for f in result.structured["files"]] == ["app/main.py", "app/util.py"]


async def test_exclude_patterns(project: Path) -> None:
    result = await Present(project).ok("files", exclude=["*.html", "app/util.py"])
    assert [f["path"] for f in result.structured["files"]] == ["README.md", "app/main.py"]


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "app/../../outside.txt"])
async def test_paths_outside_the_root_are_refused(project: Path, path: str) -> None:
    write(project.parent / "outside.txt", "secret")
    result = await Present(project)("files", paths=[path])
    assert result.is_error
    assert "outside the root directory" in result.text


async def test_symlinks_leading_out_are_refused_or_skipped(project: Path) -> None:
    secret = write(project.parent / "secret.txt", "secret")
    (project / "app" / "leak.txt").symlink_to(secret)
    (project / "app" / "alias.py").symlink_to(project / "app" / "main.py")
    (project / "docs").symlink_to(project.parent, target_is_directory=True)
    (project / "app" / "dangling").symlink_to(project / "gone")
    present = Present(project)

    named = await present("files", paths=["app/leak.txt"])
    assert named.is_error and "outside the root directory" in named.text

    walked = await present.ok("files", paths=["."])
    names = [f["path"] for f in walked.structured["files"]]
    assert "app/leak.txt" not in names
    reasons = {s["path"]: s["reason"] for s in walked.structured["skipped"]}
    assert reasons["app/leak.txt"] == "symlink leading outside the root"
    assert reasons["docs/"] == "symlinked directory, not followed"
    assert reasons["app/dangling"] == "broken symlink"
    # A link staying inside the root counts once, as the file it points to.
    assert ("app/alias.py" in names) != ("app/main.py" in names)


async def test_missing_path_and_empty_selection_are_clear_errors(project: Path) -> None:
    missing = await Present(project)("files", paths=["nope.txt"])
    assert missing.is_error and "no such file or directory: 'nope.txt'" in missing.text
    empty = await Present(project)("files", paths=["node_modules/.."], exclude=["*"])
    assert empty.is_error and "nothing to present" in empty.text


async def test_max_files_bounds_one_call(project: Path) -> None:
    client = LocalToolClient(present_tools(project, max_files=3))
    result = await client.call_tool("present-files", {})
    assert result.is_error and "more than 3 files" in result.text


async def test_zip_holds_the_sources_and_not_itself(project: Path) -> None:
    present = Present(project)
    result = await present.ok("zip")
    archive = project / "shop.zip"
    assert result.structured["path"] == "shop.zip"
    assert result.structured["size"] == archive.stat().st_size
    with zipfile.ZipFile(archive) as z:
        assert z.testzip() is None
        assert sorted(z.namelist()) == SOURCES
        assert z.read("app/main.py") == (project / "app" / "main.py").read_bytes()
    assert result.text.startswith(f"Wrote shop.zip ({archive.stat().st_size} B): 4 files,")

    # Zipping again: refused without overwrite, and the old archive is never packed in.
    refused = await present("zip")
    assert refused.is_error and "already exists" in refused.text
    again = await present.ok("zip", overwrite=True, paths=["."])
    with zipfile.ZipFile(archive) as z:
        assert sorted(z.namelist()) == SOURCES
    assert [f["path"] for f in again.structured["files"]] == SOURCES


async def test_files_that_may_hold_secrets_are_left_out_but_templates_kept(
    project: Path,
) -> None:
    for name in (".env.production", ".env.local", "app/.env.test", "deploy/prod.env"):
        write(project / name, "API_KEY=sk-live-secret\n")
    write(project / ".env.example", "API_KEY=\n")
    result = await Present(project).ok("zip")
    with zipfile.ZipFile(project / "shop.zip") as z:
        packed = sorted(z.namelist())
        assert not any(b"sk-live-secret" in z.read(name) for name in packed)
    assert packed == sorted([*SOURCES, ".env.example"])
    reasons = {s["path"]: s["reason"] for s in result.structured["skipped"]}
    for name in (".env", ".env.production", ".env.local", "app/.env.test", "deploy/prod.env"):
        assert reasons[name] == "may hold secrets"
    assert "  .env.production (may hold secrets)" in result.text.splitlines()
    # Named on purpose, one is handed back like any file named directly.
    named = await Present(project).ok("files", paths=[".env.production"])
    assert [f["path"] for f in named.structured["files"]] == [".env.production"]


async def test_a_second_zip_leaves_the_first_out(project: Path) -> None:
    present = Present(project)
    await present.ok("zip", name="proj.zip")
    write(project / "vendor" / "library.zip", "not ours")  # a zip of the user's: kept
    second = await present.ok("zip", name="release/proj-2.zip")
    with zipfile.ZipFile(project / "release" / "proj-2.zip") as z:
        assert sorted(z.namelist()) == sorted([*SOURCES, "vendor/library.zip"])
    reasons = {s["path"]: s["reason"] for s in second.structured["skipped"]}
    assert reasons["proj.zip"] == "an archive present-zip wrote before"
    # So does a fresh set of tools (another run, another process): the mark is in the file.
    third = await Present(project).ok("files")
    assert {f["path"] for f in third.structured["files"]} == {*SOURCES, "vendor/library.zip"}


async def test_zip_names_are_checked_and_confined(project: Path) -> None:
    present = Present(project)
    made = await present.ok("zip", name="out/release.zip", paths=["app"])
    with zipfile.ZipFile(project / "out" / "release.zip") as z:
        assert sorted(z.namelist()) == ["app/main.py", "app/util.py"]
    assert made.structured["path"] == "out/release.zip"

    for name, message in [
        ("release.tar", "must end in .zip"),
        ("../release.zip", "outside the root directory"),
        ("app", "must end in .zip"),
    ]:
        result = await present("zip", name=name)
        assert result.is_error and message in result.text
    assert not (project.parent / "release.zip").exists()
    # Nothing half-written is left behind by the failures.
    assert leftovers(project) == []


@contextlib.contextmanager
def without_root_powers(folder: Path) -> Iterator[None]:
    """As root, act as "nobody" (who owns ``folder``), so file modes are enforced."""
    if os.geteuid() != 0:
        yield
        return
    os.chown(folder, 65534, 65534)
    os.setegid(65534)
    os.seteuid(65534)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


async def test_a_failed_zip_leaves_the_old_archive_intact() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        os.chmod(scratch, 0o755)  # reachable by "nobody"
        project = Path(scratch) / "shop"
        write(project / "README.md", "# Shop")
        present = Present(project)
        await present.ok("zip", name="keep.zip", paths=["README.md"])
        archive = project / "keep.zip"
        before = archive.read_bytes()
        os.chmod(write(project / "locked.py"), 0)
        with without_root_powers(project):
            result = await present("zip", name="keep.zip", overwrite=True)
            left = leftovers(project)
        assert result.is_error
        assert "cannot read locked.py: Permission denied" in result.text
        assert archive.read_bytes() == before
        assert left == []


async def test_root_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        present_tools(tmp_path / "missing")
    for bad in [0, True, "10"]:
        with pytest.raises(UserError, match="max_files must be a positive integer"):
            present_tools(tmp_path, max_files=bad)  # type: ignore[arg-type]


async def test_tools_for_one_root_register_once_and_other_roots_clash(tmp_path: Path) -> None:
    provider = ScriptedProvider(["hi"])
    agent = SimpleAgent(
        provider=provider, tools=[*present_tools(tmp_path), *present_tools(tmp_path)]
    )
    await agent.run("hello")
    assert provider.requests[0].tool_names == ["present-files", "present-zip"]
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(UserError, match="two different tools are named 'present-files'"):
        SimpleAgent(provider=provider, tools=[*present_tools(tmp_path), *present_tools(other)])


async def test_hidden_paths_are_never_presented(tmp_path: Path) -> None:
    """What the daemon does for ``$HERON_HOME`` inside a node's directory."""
    root = tmp_path / "work"
    write(root / "out.txt", "result")
    write(root / ".heron" / "credentials.json", "sk-present-marker")
    client = LocalToolClient(present_tools(root, hidden=[root / ".heron"]))
    zipped = await client.call_tool("present-zip", {})
    assert not zipped.is_error, zipped.text
    with zipfile.ZipFile(root / "work.zip") as archive:
        assert archive.namelist() == ["out.txt"]
    named = await client.call_tool("present-files", {"paths": [".heron/credentials.json"]})
    assert named.is_error and "not available to these tools" in named.text
    with pytest.raises(UserError, match="a list of paths"):
        present_tools(root, hidden=str(root / ".heron"))  # type: ignore[arg-type]
