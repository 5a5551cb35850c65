"""A malformed budget or balancer setting is said on the page, never a traceback (the frame reads both
first in every run)."""

from ui_helpers import open_app, page_file


def test_a_malformed_client_budget_is_said(app_model, monkeypatch):
    monkeypatch.setenv("LLMVIZ_CLIENT_BUDGET", "lots")
    at = open_app(page_file("lesson"), lang="en")
    assert not at.exception
    [error] = [e.value for e in at.error]
    assert "LLMVIZ\\_CLIENT\\_BUDGET" in error and "lots" in error and "off" in error
