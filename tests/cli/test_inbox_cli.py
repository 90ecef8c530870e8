"""``heron inbox ...`` against a real daemon, found through ``HERON_HOME`` as a shell would."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.support.cli import Done, asking
from typer.testing import CliRunner

from heron import api
from heron.cli import app
from heron.cli._inbox import parse_answer
from heron.client import Heron

# The shared daemon fixtures, and the nodes CLI tests' way of reaching that daemon.
pytestmark = pytest.mark.usefixtures("on_daemon")


def heron(*args: str, input: str | None = None) -> Done:
    result = CliRunner().invoke(app, list(args), prog_name="heron", input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # an escaped exception is a bug, not an outcome
    return Done(result.exit_code, result.stdout, result.stderr)


def test_list_show_and_respond_with_flags(client: Heron, scripts: Any) -> None:
    node_id, ticket = asking(client, scripts, "flags", "Shipped.")
    listed = heron("inbox", "list", "--node", node_id)
    assert listed.code == 0 and ticket in listed.out and "Which branch?" in listed.out
    shown = heron("inbox", "show", ticket)
    assert shown.code == 0
    for line in ("1. Which branch?", "   1) main", "   3) release", "2. Anything else?"):
        assert line in shown.out
    assert "asked to: ship it" in shown.out
    as_json = json.loads(heron("inbox", "show", ticket, "--json").out)
    assert as_json["ticket_id"] == ticket and as_json["node"]["node_id"] == node_id
    progress = heron("inbox", "progress", ticket, "on it", "--percent", "50")
    assert progress.code == 0 and "1 notes" in progress.out
    wrong = heron("inbox", "respond", ticket, "-a", "1")
    assert wrong.code == 1 and "one --answer per question" in wrong.err
    done = heron("inbox", "respond", ticket, "-a", "1,3", "-a", "no", "--by", "ada")
    assert done.code == 0 and f"node {node_id} has the answers" in done.out, done
    outcome = client.nodes.wait_for_outcome(node_id, timeout=30)
    assert isinstance(outcome, api.NodeResult) and outcome.output_text == "Shipped."
    answers = client.human.inbox.response(ticket).answers or []
    assert [a.choices for a in answers] == [["main", "release"], []]
    assert answers[1].text == "no"
    again = heron("inbox", "respond", ticket, "--text", "x")
    assert again.code == 1 and "answered" in again.err
    history = heron("inbox", "history", "--node", node_id)
    assert history.code == 0 and ticket in history.out and "answered" in history.out


def test_respond_asks_each_question_on_the_terminal(client: Heron, scripts: Any) -> None:
    node_id, ticket = asking(client, scripts, "prompted", "Done.")
    # An out-of-range number is asked again; then a choice by name; then own words.
    done = heron("inbox", "respond", ticket, input="9\ndev\nbe careful\n")
    assert done.code == 0, done
    assert "pick a number from 1 to 3: try again" in done.out
    client.nodes.wait_for_outcome(node_id, timeout=30)
    answers = client.human.inbox.response(ticket).answers or []
    assert answers[0].choices == ["dev"] and answers[1].text == "be careful"


def test_cancel_dismiss_and_bad_ids(client: Heron) -> None:
    one = client.human.requests.create("One", body="read me")
    two = client.human.requests.create("Two", body="read me too")
    assert heron("inbox", "cancel", one.request_id, "--reason", "moot").code == 0
    assert client.human.requests.retrieve(one.request_id).reason == "moot"
    dismissed = heron("inbox", "dismiss", two.request_id, "--json")
    assert dismissed.code == 0 and json.loads(dismissed.out)["status"] == "dismissed"
    bad = heron("inbox", "show", "bad id!")
    assert bad.code == 1 and "invalid inbox ticket id" in bad.err
    unknown = heron("inbox", "show", "hr_0000000000000000")
    assert unknown.code == 1 and "request_not_found" in unknown.err


def test_an_answer_is_read_as_numbers_a_choice_or_words() -> None:
    question = api.HumanQuestion(question="Q", choices=["Red", "Blue"], multiple=True)
    assert parse_answer(question, "2, 1") == {"choices": ["Blue", "Red"]}
    assert parse_answer(question, " red ") == {"choices": ["Red"]}
    assert parse_answer(question, "green") == {"text": "green"}
    assert parse_answer(question, "2,2") == {"choices": ["Blue"]}
    single = api.HumanQuestion(question="Q", choices=["Red", "Blue"])
    with pytest.raises(ValueError, match="one choice"):
        parse_answer(single, "1,2")
    strict = api.HumanQuestion(question="Q", choices=["a"], free_text=False)
    with pytest.raises(ValueError, match="choices"):
        parse_answer(strict, "b")
    with pytest.raises(ValueError, match="empty"):
        parse_answer(api.HumanQuestion(question="Q"), "  ")


def test_choices_that_are_numbers_are_typed_not_counted() -> None:
    # "3" is the choice 3, not the third choice (7): a wrong answer sent silently.
    replicas = api.HumanQuestion(question="How many?", choices=["3", "5", "7"], free_text=False)
    assert parse_answer(replicas, "3") == {"choices": ["3"]}
    assert parse_answer(replicas, "5") == {"choices": ["5"]}
    with pytest.raises(ValueError, match="choices"):
        parse_answer(replicas, "1")
    ports = api.HumanQuestion(question="Ports?", choices=["80", "443", "8080"], multiple=True)
    assert parse_answer(ports, "443, 80") == {"choices": ["443", "80"]}
