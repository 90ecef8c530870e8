"""The present skill: its prompt entry and its tools, bound to the root it is given."""

import zipfile
from pathlib import Path

import pytest

from heron import SimpleAgent
from heron.skills import present
from heron.testing import ScriptedProvider, call
from heron.tools import present_tools


async def test_renders_into_the_system_prompt_and_registers_its_tools_once(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider(["ok"])
    agent = SimpleAgent(
        provider=provider, skills=[present(tmp_path)], tools=present_tools(tmp_path)
    )
    await agent.run("hand it over")
    request = provider.requests[0]
    assert request.tool_names == ["present-files", "present-zip"]
    system = request.messages[0].text
    assert "present - Use when a job's output is files the user should receive" in system
    assert "present-zip" in system


async def test_works_under_the_given_root(tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text("# Report")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "x.pyc").write_bytes(b"\0")
    provider = ScriptedProvider([call("present-zip", name="report.zip"), "Here it is."])
    result = await SimpleAgent(provider=provider, skills=[present(tmp_path)]).run("zip it")
    assert not result.tool_calls[0].is_error, result.tool_calls[0].result
    with zipfile.ZipFile(tmp_path / "report.zip") as z:
        assert z.namelist() == ["report.md"]


def test_defaults_to_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    skill = present()
    assert skill.name == "present"
    assert [t.name for t in skill.tools] == ["present-files", "present-zip"]
    assert all(getattr(t, "root", None) == tmp_path.resolve() for t in skill.tools)
