"""``client.nodes`` lifecycle, orchestration and nested resources through both clients:
update, promote/demote, recycle, relaunch_root, revive_all, yield_, wait, reports, jobs,
worktree and result."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.daemon import SLOW, Daemon, rewrite
from tests.support.polling import eventually_async

from heron import api
from heron.client import ConflictError, NotFoundError, UnprocessableEntityError

from ._both import MODES, On, on_client


@pytest.fixture(params=MODES)
async def on(request: pytest.FixtureRequest, daemon: Daemon) -> AsyncIterator[On]:
    async with on_client(request.param, daemon) as client:
        yield client


async def status_is(on: On, node_id: str, status: str) -> api.Node:
    found: api.Node = await eventually_async(
        lambda: on(lambda c: c.nodes.retrieve(node_id)),
        lambda node: node.status == status,
        interval=0.02,
        what=f"{node_id} being {status}",
    )
    return found


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    """A scripted turn calling one tool."""
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


async def test_update_changes_the_config(on: On, scripts: Any) -> None:
    node = await on(lambda c: c.nodes.create(prompt="x", no_kickoff=True, model=scripts("u", [])))
    updated = await on(
        lambda c: c.nodes.update(node.node_id, name="renamed", description="d", deadline="1h")
    )
    assert updated.name == "renamed" and updated.description == "d"
    assert updated.deadline_at is not None
    other = scripts("other", ["x"])
    patched = await on(lambda c: c.nodes.update(node.node_id, api.NodeConfigPatch(model=other)))
    assert patched.model == other and patched.name == "renamed"
    with pytest.raises(UnprocessableEntityError):
        await on(lambda c: c.nodes.update(node.node_id, {"deadline": "tomorrow"}))
    with pytest.raises(TypeError, match=r"mapping or api\.NodeConfigPatch"):
        await on(lambda c: c.nodes.update(node.node_id, "name"))
    await on(lambda c: c.nodes.cancel(node.node_id))


async def test_promote_and_demote(on: On, scripts: Any) -> None:
    model = scripts("pd", ["fanned out"])
    node = await on(lambda c: c.nodes.create(prompt="x", no_kickoff=True, model=model))
    promoted = await on(lambda c: c.nodes.promote(node.node_id))
    assert promoted.mode == "orchestrator" and promoted.runs == 0
    assert (await on(lambda c: c.nodes.demote(node.node_id))).mode == "base"
    woke = await on(lambda c: c.nodes.promote(node.node_id, message="fan out"))
    assert woke.mode == "orchestrator" and woke.status == "running"
    await on(lambda c: c.nodes.wait_for_outcome(node.node_id, timeout=30))
    with pytest.raises(ConflictError) as caught:
        await on(lambda c: c.nodes.demote(node.node_id))
    assert caught.value.code == "node_settled"


async def test_recycle_gives_the_node_a_fresh_context(on: On, scripts: Any) -> None:
    model = scripts("recycle", {"steps": ["The code is 7."], "compaction": "Summary: 7."})
    node = await on(
        lambda c: c.nodes.create(prompt="remember 7", model=model, root_lifecycle="resident")
    )
    await status_is(on, node.node_id, "dormant")
    recycled = await on(lambda c: c.nodes.recycle(node.node_id))
    assert isinstance(recycled, api.Recycled)
    assert recycled.summary == "Summary: 7." and recycled.node.node_id == node.node_id
    await on(lambda c: c.nodes.cancel(node.node_id))


async def test_relaunch_root_runs_the_tree_again(on: On, scripts: Any) -> None:
    root = await on(
        lambda c: c.nodes.create(prompt="build", model=scripts("root", ["built"]), no_kickoff=True)
    )
    child = await on(
        lambda c: c.nodes.create(prompt="c", parent=root.node_id, model=scripts("c", [SLOW]))
    )
    relaunched = await on(lambda c: c.nodes.relaunch_root(child.node_id))
    assert relaunched.node_id == root.node_id and relaunched.status == "running"
    assert (await on(lambda c: c.nodes.retrieve(child.node_id))).status == "cancelled"
    outcome = await on(lambda c: c.nodes.wait_for_outcome(root.node_id, timeout=30))
    assert outcome.kind == "result" and outcome.output_text == "built"


async def test_revive_all_revives_a_node_its_provider_failed(on: On, scripts: Any) -> None:
    model = scripts("flaky", [{"error": "overloaded", "status": 503}])
    node = await on(lambda c: c.nodes.create(prompt="try", model=model))
    failed = await on(lambda c: c.nodes.wait_for_outcome(node.node_id, timeout=30))
    assert failed.kind == "failure" and failed.reason == "provider_error"
    rewrite(model, ["Recovered."])
    result = await on(lambda c: c.nodes.revive_all())
    assert isinstance(result, api.ReviveAllResult)
    assert node.node_id in [n.node_id for n in result.revived]
    outcome = await on(lambda c: c.nodes.wait_for_outcome(node.node_id, timeout=30))
    assert outcome.kind == "result" and outcome.output_text == "Recovered."


async def test_wait_parks_a_parent_on_its_children_and_yield_hands_the_turn_back(
    on: On, scripts: Any
) -> None:
    parent = await on(
        lambda c: c.nodes.create(
            prompt="lead", mode="orchestrator", no_kickoff=True, model=scripts("p", ["ok"])
        )
    )
    child = await on(
        lambda c: c.nodes.create(prompt="c", parent=parent.node_id, model=scripts("c", [SLOW]))
    )
    waiting = await on(lambda c: c.nodes.wait(parent.node_id, [child.node_id], timeout_seconds=600))
    assert isinstance(waiting, api.WaitStatus)
    assert waiting.pending == [child.node_id] and waiting.settled == []
    assert waiting.deadline_at is not None
    yielded = await on(lambda c: c.nodes.yield_(parent.node_id, reason="children work"))
    assert yielded.node_id == parent.node_id and yielded.status == "dormant"
    stranger = await on(lambda c: c.nodes.create(prompt="s", no_kickoff=True))
    with pytest.raises(UnprocessableEntityError) as caught:
        await on(lambda c: c.nodes.wait(parent.node_id, [stranger.node_id]))
    assert caught.value.code == "not_a_child"
    await on(lambda c: c.nodes.cancel(parent.node_id))
    with pytest.raises(ConflictError):
        await on(lambda c: c.nodes.yield_(parent.node_id))


@pytest.mark.parametrize(
    ("children", "seconds", "error"),
    [
        ("child", None, TypeError),
        ([], None, ValueError),
        (["child"], 0, ValueError),
        (["child"], 7 * 86400 + 1, ValueError),
        (["child"], True, ValueError),
    ],
)
async def test_wait_arguments_are_checked_locally(
    on: On, children: Any, seconds: Any, error: type[Exception]
) -> None:
    with pytest.raises(error):
        await on(lambda c: c.nodes.wait("parent", children, timeout_seconds=seconds))


async def test_reports_are_listed_newest_first(on: On, scripts: Any) -> None:
    model = scripts(
        "reports",
        [
            call("push-report", tier="progress", body="Read the code."),
            call("push-report", tier="milestone", body="Tests pass.", title="Green"),
            "All done.",
        ],
    )
    node = await on(lambda c: c.nodes.create(prompt="work", model=model))
    await on(lambda c: c.nodes.wait_for_outcome(node.node_id, timeout=30))
    reports = await on(lambda c: c.nodes.reports.list(node.node_id))
    assert [r.body for r in reports] == ["Tests pass.", "Read the code."]
    assert all(isinstance(r, api.Report) for r in reports) and reports[0].title == "Green"
    assert [r.body for r in await on(lambda c: c.nodes.reports.list(node.node_id, limit=1))] == [
        "Tests pass."
    ]
    progress = await on(lambda c: c.nodes.reports.list(node.node_id, tier="progress"))
    assert [r.body for r in progress] == ["Read the code."]
    for limit in (0, 1001, True, 2.5):
        with pytest.raises(ValueError, match="limit"):
            await on(lambda c, limit=limit: c.nodes.reports.list(node.node_id, limit=limit))
    with pytest.raises(UnprocessableEntityError):
        await on(lambda c: c.nodes.reports.list(node.node_id, tier="urgent"))


async def test_jobs_are_listed_and_cancelled(on: On, scripts: Any) -> None:
    model = scripts("sleeper", [call("bash-start", command="sleep 600"), "started"])
    node = await on(
        lambda c: c.nodes.create(prompt="start it", model=model, root_lifecycle="resident")
    )

    (job,) = await eventually_async(
        lambda: on(lambda c: c.nodes.jobs.list(node.node_id)),
        lambda jobs: [j.status for j in jobs] == ["running"],
        interval=0.02,
        what="the job running",
    )
    assert job.job_id == "bash-1" and job.command == "sleep 600"
    cancelled = await on(lambda c: c.nodes.jobs.cancel(node.node_id, job.job_id))
    assert cancelled.job_id == "bash-1" and cancelled.status == "killed"
    with pytest.raises(ConflictError):
        await on(lambda c: c.nodes.jobs.cancel(node.node_id, job.job_id))
    with pytest.raises(NotFoundError):
        await on(lambda c: c.nodes.jobs.cancel(node.node_id, "bash-99"))
    await on(lambda c: c.nodes.cancel(node.node_id))


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "README.md").write_text("hello\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "-qm", "one")
    return root


async def test_worktree_close_keeps_the_branch_and_abandon_drops_it(
    on: On, scripts: Any, repo: Path
) -> None:
    model = scripts("tree", ["done"])
    kept = await on(lambda c: c.nodes.create(prompt="x", model=model, cwd=str(repo), worktree=True))
    dropped = await on(
        lambda c: c.nodes.create(prompt="x", model=model, cwd=str(repo), worktree="drop")
    )
    for node in (kept, dropped):
        await on(lambda c, node=node: c.nodes.wait_for_outcome(node.node_id, timeout=30))
    closed = await on(lambda c: c.nodes.worktree.close(kept.node_id))
    assert closed.worktree is not None and closed.worktree.state == "closed"
    abandoned = await on(lambda c: c.nodes.worktree.abandon(dropped.node_id))
    assert abandoned.worktree is not None and abandoned.worktree.state == "abandoned"
    branches = git(repo, "branch", "--format=%(refname:short)").split()
    assert f"heron/{kept.node_id}" in branches and "heron/drop" not in branches


async def test_result_submit_checks_the_schema(on: On, scripts: Any) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    node = await on(
        lambda c: c.nodes.create(prompt="x", output_schema=schema, model=scripts("r", [SLOW]))
    )
    with pytest.raises(UnprocessableEntityError) as caught:
        await on(lambda c: c.nodes.result.submit(node.node_id, {"n": "three"}))
    assert caught.value.code == "invalid_result" and caught.value.details
    accepted = await on(lambda c: c.nodes.result.submit(node.node_id, {"n": 3}))
    assert isinstance(accepted, api.ResultAccepted) and accepted.node_id == node.node_id
    await on(lambda c: c.nodes.cancel(node.node_id))
    with pytest.raises(ConflictError) as settled:
        await on(lambda c: c.nodes.result.submit(node.node_id, {"n": 3}))
    assert settled.value.code == "node_settled"
