"""The page refuses a browser without a session: no cookie, a used or a wrong sign-in
code; and a page whose session ends says so (run ``heron ui`` again) instead of breaking."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from tests.runtime.ui.conftest import PageLog, base_url, go, open_link

pytestmark = pytest.mark.slow


def test_without_a_session_the_page_and_the_api_are_refused(
    browser: Any, client: httpx.Client
) -> None:
    page_url = open_link(client)["url"]
    ctx = browser.new_context()
    try:
        answer = ctx.request.get(page_url)
        assert answer.status == 401
        assert "Not signed in" in answer.text()
        assert ctx.request.get(page_url + "app.js").status == 401
        api = ctx.request.get(page_url.replace("/ui/", "/v1/nodes"))
        assert api.status == 401
        assert api.json()["error"]["code"] == "unauthorized"
    finally:
        ctx.close()


def test_a_used_or_wrong_sign_in_code_is_refused(browser: Any, client: httpx.Client) -> None:
    login = open_link(client)["login_url"]
    first = browser.new_context()
    second = browser.new_context()
    try:
        assert first.request.get(login, max_redirects=0).status == 303
        again = second.request.get(login, max_redirects=0)
        assert again.status == 401
        assert "not valid" in again.text()
        wrong = second.request.get(login.rsplit("=", 1)[0] + "=not-a-code", max_redirects=0)
        assert wrong.status == 401
        # Neither refusal signed the second browser in.
        assert second.request.get(login.split("login", 1)[0]).status == 401
    finally:
        first.close()
        second.close()


def test_a_change_without_the_csrf_token_is_refused(page: Any, page_log: PageLog) -> None:
    page_log.allow(r"403")
    status = page.evaluate(
        """async () => (await fetch("/v1/nodes", {method: "POST", body: "{}",
            headers: {"Content-Type": "application/json"}})).status"""
    )
    assert status == 403


def test_a_page_whose_session_ended_says_to_sign_in_again(
    page: Any, context: Any, page_log: PageLog
) -> None:
    page_log.allow(r"401")  # the browser logs each refused request
    context.clear_cookies()
    go(page, "#/inbox")
    ended = page.locator("#session-ended")
    ended.wait_for()
    assert "heron ui" in ended.inner_text()
    assert base_url(page).endswith("/ui/")
